// TIFF JPEG tiles are usually "abbreviated" streams: the quantization and Huffman tables live
// once in the IFD's JPEGTables tag (itself SOI, tables, EOI) instead of in every tile. A plain
// JPEG decoder, or a browser receiving a passed-through tile, needs them inline: the merged
// stream is the tile's SOI, the tables' segments, then the rest of the tile.

const SOI = [0xff, 0xd8];

const startsWithSoi = (b: Uint8Array) => b.length >= 2 && b[0] === SOI[0] && b[1] === SOI[1];

export function mergeJpegTables(tile: Uint8Array, tables: Uint8Array | undefined): Uint8Array {
  // No tables (or nothing between the tables' SOI and EOI): the tile stands alone.
  if (!tables || tables.length <= 4 || !startsWithSoi(tables) || !startsWithSoi(tile)) return tile;
  const end = tables[tables.length - 2] === 0xff && tables[tables.length - 1] === 0xd9 ? tables.length - 2 : tables.length;
  const segments = tables.subarray(2, end);
  const out = new Uint8Array(tile.length + segments.length);
  out.set(tile.subarray(0, 2), 0);
  out.set(segments, 2);
  out.set(tile.subarray(2), 2 + segments.length);
  return out;
}

/** Frame size of a JPEG stream from its SOF marker (undefined when there is none). */
export function jpegFrame(bytes: Uint8Array): { width: number; height: number; components: number } | undefined {
  let i = 2;
  while (i + 4 <= bytes.length) {
    if (bytes[i] !== 0xff) return undefined;
    const marker = bytes[i + 1];
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    const length = (bytes[i + 2] << 8) | bytes[i + 3];
    // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (i + 10 > bytes.length) return undefined;
      return { height: (bytes[i + 5] << 8) | bytes[i + 6], width: (bytes[i + 7] << 8) | bytes[i + 8], components: bytes[i + 9] };
    }
    if (marker === 0xda) return undefined; // scan data before any frame header
    i += 2 + length;
  }
  return undefined;
}
