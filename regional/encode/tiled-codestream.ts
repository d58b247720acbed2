// A tiled JPEG 2000 codestream (ISO/IEC 15444-1 Annex A) put together from single-tile
// codestreams, one per tile, so that OpenJPEG's memory follows a tile, not the image. The
// WebAssembly build codes a whole image as one tile (its tile-size setting is ignored), holding
// every sample as a 32-bit integer, its codestream buffer and its working buffers at once: 9
// times the raw image, in WebAssembly memory that never shrinks.
//
// Each tile is coded as an image of its own that OpenJPEG places on the reference grid as the
// tiled image places it. Tiles start at multiples of TILE_SIDE, a power of two of at least
// 2^decompositions: at every resolution such a tile's subbands start on the same parity, its
// code-blocks (64², or the whole subband when smaller) fall the same way, and no precinct
// boundary (OpenJPEG's default precincts are 2^15) crosses it, as at origin 0. So a tile's
// single tile-part is the tiled image's, once renumbered; the main header is the first tile's,
// its SIZ widened to the whole image, and every tile's header must match it.

/** Tile width and height: 3 MiB of RGB, whose encode fits OpenJPEG's initial 50 MiB of memory. */
export const TILE_SIDE = 1024;
/** Wavelet levels, as OpenJPEG's default; fewer for images too small to halve that often. */
const MAX_DECOMPOSITIONS = 5;

/** One tile of the image, and the origin its own encode puts it at. */
export interface Tile {
  x: number;
  y: number;
  width: number;
  height: number;
  /**
   * 0, or TILE_SIDE for a tile narrower (or lower) than 2^decompositions: OpenJPEG refuses such
   * an image, though not such a tile of a larger grid, so it is coded at offset TILE_SIDE of a
   * grid TILE_SIDE wider, a multiple of TILE_SIDE like the tile's own place.
   */
  originX: number;
  originY: number;
}

/** Wavelet levels of a `width`×`height` image, the same in every tile. */
export function decompositions(width: number, height: number): number {
  return Math.max(0, Math.min(MAX_DECOMPOSITIONS, Math.floor(Math.log2(Math.min(width, height)))));
}

/** The tiles of a `width`×`height` image, in raster order (their tile indices); one when it fits in one. */
export function tilesOf(width: number, height: number): Tile[] {
  const narrowest = 2 ** decompositions(width, height);
  // Only a last column or row can be that narrow: the first is the image's or TILE_SIDE.
  const origin = (side: number, at: number) => (at > 0 && side < narrowest ? TILE_SIDE : 0);
  const tiles: Tile[] = [];
  for (let y = 0; y < Math.max(1, height); y += TILE_SIDE) {
    for (let x = 0; x < Math.max(1, width); x += TILE_SIDE) {
      const w = Math.min(TILE_SIDE, width - x);
      const h = Math.min(TILE_SIDE, height - y);
      tiles.push({ x, y, width: w, height: h, originX: origin(w, x), originY: origin(h, y) });
    }
  }
  return tiles;
}

const SOC = Uint8Array.of(0xff, 0x4f);
const EOC = Uint8Array.of(0xff, 0xd9);
const SIZ = 0xff51;
const SOT = 0xff90;

/** A single-tile codestream in its parts: SIZ, the rest of the main header, the tile-part. */
interface SingleTile {
  siz: Uint8Array;
  header: Uint8Array;
  /** SOT to the end of the tile's data, as a view into the codestream (renumbered in place). */
  tilePart: Uint8Array;
}

/**
 * The tiled codestream of a `width`×`height` image from its tiles' codestreams (tilesOf's order),
 * in pieces to be written one after another; a single tile's codestream as it is.
 */
export function tiledCodestream(width: number, height: number, tiles: Uint8Array[]): Uint8Array[] {
  if (tiles.length === 1) return tiles;
  const parts = tiles.map(singleTile);
  const [{ siz, header }] = parts;
  parts.forEach((part, index) => {
    if (!sameBytes(part.header, header)) throw new Error(`tile ${index}'s coding parameters differ from the first tile's`);
    new DataView(part.tilePart.buffer, part.tilePart.byteOffset).setUint16(4, index); // Isot
  });
  const whole = siz.slice();
  const fields = new DataView(whole.buffer);
  // Xsiz, Ysiz, then (past XOsiz, YOsiz, both 0 in the first tile) XTsiz, YTsiz.
  [width, height].forEach((size, i) => fields.setUint32(6 + 4 * i, size));
  [TILE_SIDE, TILE_SIDE].forEach((side, i) => fields.setUint32(22 + 4 * i, side));
  return [SOC, whole, header, ...parts.map((p) => p.tilePart), EOC];
}

/** Main-header bytes of a single-tile codestream: what every tile after the first leaves out. */
export function mainHeaderBytes(codestream: Uint8Array): number {
  const { siz, header } = singleTile(codestream);
  return SOC.length + siz.length + header.length;
}

/** Splits what OpenJPEG wrote for one tile: SOC, SIZ, other marker segments, one tile-part, EOC. */
function singleTile(codestream: Uint8Array): SingleTile {
  const bytes = new DataView(codestream.buffer, codestream.byteOffset, codestream.byteLength);
  const unexpected = (what: string) => new Error(`OpenJPEG's single-tile codestream has ${what}`);
  if (bytes.getUint16(0) !== 0xff4f || bytes.getUint16(2) !== SIZ) throw unexpected("no SOC and SIZ");
  let at = 2;
  // Marker segments, each its marker then its length (which counts itself, not the marker).
  const next = () => at + 2 + bytes.getUint16(at + 2);
  const headerStart = next();
  for (at = headerStart; bytes.getUint16(at) !== SOT; ) {
    at = next();
    if (at + 12 > codestream.length) throw unexpected("no SOT");
  }
  const tilePartBytes = bytes.getUint32(at + 6); // Psot
  const [tilePartIndex, tileParts] = [bytes.getUint8(at + 10), bytes.getUint8(at + 11)];
  if (tilePartIndex !== 0 || tileParts !== 1 || at + tilePartBytes !== codestream.length - EOC.length) throw unexpected("more than one tile-part");
  return {
    siz: codestream.subarray(2, headerStart),
    header: codestream.subarray(headerStart, at),
    tilePart: codestream.subarray(at, at + tilePartBytes),
  };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
