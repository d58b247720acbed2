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
