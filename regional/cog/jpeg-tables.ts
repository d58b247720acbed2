// TIFF JPEG tiles are usually "abbreviated" streams: the quantization and Huffman tables live
// once in the IFD's JPEGTables tag (itself SOI, tables, EOI) instead of in every tile. A plain
// JPEG decoder, or a browser receiving a passed-through tile, needs them inline: the merged
// stream is SOI, the tables' segments, then the rest of the tile.

const SOI = [0xff, 0xd8];

const startsWithSoi = (b: Uint8Array) => b.length >= 2 && b[0] === SOI[0] && b[1] === SOI[1];

/**
 * What goes before a tile's own segments in its merged stream: the tables' SOI and segments (a
 * view of `tables`, no copy), or undefined when there is nothing to merge.
 */
export function tablesPrefix(tables: Uint8Array | undefined): Uint8Array | undefined {
  // No tables (or nothing between the tables' SOI and EOI): a tile stands alone.
  if (!tables || tables.length <= 4 || !startsWithSoi(tables)) return undefined;
  const end = tables[tables.length - 2] === 0xff && tables[tables.length - 1] === 0xd9 ? tables.length - 2 : tables.length;
  return tables.subarray(0, end);
}

/** The tile after its SOI: what follows the prefix (tablesPrefix) in a merged stream; undefined without an SOI. */
export const tileSegments = (tile: Uint8Array): Uint8Array | undefined => (startsWithSoi(tile) ? tile.subarray(2) : undefined);

/** The merged stream, written into `into` when it has room (else into new memory). */
export function mergeJpegTables(tile: Uint8Array, tables: Uint8Array | undefined, into?: Uint8Array): Uint8Array {
  const prefix = tablesPrefix(tables);
  const rest = tileSegments(tile);
  if (!prefix || !rest) return tile;
  const bytes = prefix.length + rest.length;
  const out = into && into.length >= bytes ? into.subarray(0, bytes) : new Uint8Array(bytes);
  out.set(prefix, 0);
  out.set(rest, prefix.length);
  return out;
}

/** What a JPEG stream's frame header declares, and whether libjpeg decodes it in one pass. */
export interface JpegFrame {
  width: number;
  height: number;
  components: number;
  /**
   * A sequential Huffman frame (SOF0, SOF1) whose first scan holds every component: libjpeg
   * then decodes a row of MCUs at a time. Any other (progressive, a scan a component, lossless,
   * arithmetic) holds every coefficient of the frame until its last scan.
   */
  onePass: boolean;
}

const SOS = 0xda;

/**
 * The frame of a JPEG stream (undefined when it has none), found as libjpeg's marker reader
 * finds it, because TurboJPEG allocates what that frame says: bytes before an 0xFF are skipped,
 * as are 0xFF fill bytes and stuffed 0xFF00 pairs; RSTn and TEM carry no length; the first SOF
 * is the frame, and the first SOS after it says how many components its scan holds. Any other
 * reading lets a tile show this check one frame and the decoder another.
 */
export function jpegFrame(bytes: Uint8Array): JpegFrame | undefined {
  let frame: JpegFrame | undefined;
  for (const at of segments(bytes)) {
    const marker = bytes[at - 1];
    if (!frame && isFrameHeader(marker)) {
      // Length (2), precision (1), height (2), width (2), components (1).
      if (at + 8 > bytes.length) return undefined;
      const sequential = marker === 0xc0 || marker === 0xc1;
      frame = { height: (bytes[at + 3] << 8) | bytes[at + 4], width: (bytes[at + 5] << 8) | bytes[at + 6], components: bytes[at + 7], onePass: sequential };
    } else if (frame && marker === SOS) {
      // Length (2), then the scan's component count.
      return { ...frame, onePass: frame.onePass && bytes[at + 2] === frame.components };
    } else if (!hasLength(marker)) break; // scan data before a frame, a second SOI, or a marker libjpeg refuses
  }
  return frame && { ...frame, onePass: false };
}

/**
 * Where each marker segment's length field starts, after SOI, the marker byte just before it;
 * the walk goes on past each segment by its length, and ends at the end of the bytes.
 */
function* segments(bytes: Uint8Array): Generator<number> {
  if (!startsWithSoi(bytes)) return;
  let i = 2;
  for (;;) {
    while (i < bytes.length && bytes[i] !== 0xff) i++;
    while (i < bytes.length && bytes[i] === 0xff) i++;
    if (i >= bytes.length) return;
    const marker = bytes[i++];
    if (marker === 0x00 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;
    yield i;
    if (i + 2 > bytes.length) return;
    i += Math.max(2, (bytes[i] << 8) | bytes[i + 1]);
  }
}

/** SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC). */
const isFrameHeader = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

/** Segments libjpeg reads or skips by their length before the frame: DHT, DAC, DQT, DRI, APPn, COM. */
const hasLength = (m: number) => m === 0xc4 || m === 0xcc || m === 0xdb || m === 0xdd || (m >= 0xe0 && m <= 0xef) || m === 0xfe;
