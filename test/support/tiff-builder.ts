// Builds small classic (little-endian) tiled TIFFs byte by byte, so tests can make files that
// lie: wrong counts, offsets past the end, IFD loops, tiles that inflate beyond their shape.
// Layout: 8-byte header, tile payloads, out-of-line tag values, then the IFD (then the
// overview's tiles, values and IFD, when there is one).

import { deflateSync } from "node:zlib";

export interface Tag {
  tag: number;
  /** 3 SHORT, 4 LONG, 7 UNDEFINED, 12 DOUBLE. */
  type: 3 | 4 | 7 | 12;
  values: number[];
  /** A declared count other than values.length (to lie). */
  count?: number;
  /** A value offset other than where the values are written (to lie; out-of-line tags only). */
  offset?: number;
}

export interface TiffSpec {
  width: number;
  height: number;
  tileWidth: number;
  tileHeight: number;
  samples?: number;
  compression?: number;
  photometric?: number;
  tiles: Uint8Array[];
  extraTags?: Tag[];
  /** Replace or add tags after the defaults are computed (offsets are known by then). */
  edit?: (tags: Map<number, Tag>, layout: { fileEnd: number; tileOffsets: number[] }) => void;
  /** The next-IFD pointer: "self" loops back to this IFD. */
  nextIfd?: "self" | number;
  /** Entries written beside the ones above even when their tag is already there (duplicates). */
  duplicates?: Tag[];
  /** A second image (an overview) whose IFD follows this one's in the chain. */
  overview?: TiffSpec;
}

const TYPE_SIZE = { 3: 2, 4: 4, 7: 1, 12: 8 } as const;
/** Out-of-line values start on a word boundary, as TIFF asks. */
const padded = (bytes: number) => bytes + (bytes % 2);

export function buildTiff(spec: TiffSpec): Uint8Array {
  const first = buildImage(spec, 8);
  const second = spec.overview && buildImage(spec.overview, 8 + first.bytes.length);
  const out = new Uint8Array(8 + first.bytes.length + (second?.bytes.length ?? 0));
  const v = new DataView(out.buffer);
  out.set([0x49, 0x49], 0);
  v.setUint16(2, 42, true);
  v.setUint32(4, first.ifdAt, true);
  out.set(first.bytes, 8);
  if (second) {
    out.set(second.bytes, 8 + first.bytes.length);
    v.setUint32(first.nextIfdAt, second.ifdAt, true);
  }
  return out;
}

/** One image's tiles, values and IFD, laid out to start at file offset `base`. */
function buildImage(spec: TiffSpec, base: number): { bytes: Uint8Array; ifdAt: number; nextIfdAt: number } {
  const samples = spec.samples ?? 3;
  const tileOffsets: number[] = [];
  let at = base;
  for (const t of spec.tiles) {
    tileOffsets.push(at);
    at += t.length;
  }
  const tags = new Map<number, Tag>();
  const put = (tag: number, type: Tag["type"], values: number[]) => tags.set(tag, { tag, type, values });
  put(256, 4, [spec.width]);
  put(257, 4, [spec.height]);
  put(258, 3, Array(samples).fill(8));
  put(259, 3, [spec.compression ?? 1]);
  put(262, 3, [spec.photometric ?? (samples >= 3 ? 2 : 1)]);
  put(277, 3, [samples]);
  put(284, 3, [1]);
  put(322, 4, [spec.tileWidth]);
  put(323, 4, [spec.tileHeight]);
  put(324, 4, tileOffsets);
  put(325, 4, spec.tiles.map((t) => t.length));
  for (const t of spec.extraTags ?? []) tags.set(t.tag, t);

  // Out-of-line values go after the tiles; the IFD after them. Sizes first, then offsets.
  const sorted = () => [...tags.values(), ...(spec.duplicates ?? [])].sort((a, b) => a.tag - b.tag);
  const outOfLine = (t: Tag) => t.values.length * TYPE_SIZE[t.type] > 4;
  const valuesBytes = sorted().filter(outOfLine).reduce((n, t) => n + padded(t.values.length * TYPE_SIZE[t.type]), 0);
  const ifdOffset = at + valuesBytes + (valuesBytes % 2);
  const fileEnd = ifdOffset + 2 + 12 * sorted().length + 4;
  spec.edit?.(tags, { fileEnd, tileOffsets });

  const entries = sorted();
  const ifdSize = 2 + 12 * entries.length + 4;
  const valueBytes = entries.filter(outOfLine).reduce((n, t) => n + padded(t.values.length * TYPE_SIZE[t.type]), 0);
  const ifdAt = at + valueBytes + (valueBytes % 2);
  // `out` holds the file from offset 0 so offsets are absolute; the caller takes from `base`.
  const out = new Uint8Array(ifdAt + ifdSize);
  const v = new DataView(out.buffer);
  spec.tiles.forEach((t, i) => out.set(t, tileOffsets[i]));
  const write = (pos: number, t: Tag) => {
    t.values.forEach((x, i) => {
      if (t.type === 3) v.setUint16(pos + 2 * i, x, true);
      else if (t.type === 4) v.setUint32(pos + 4 * i, x >>> 0, true);
      else if (t.type === 12) v.setFloat64(pos + 8 * i, x, true);
      else v.setUint8(pos + i, x);
    });
  };
  let valuesAt = at;
  v.setUint16(ifdAt, entries.length, true);
  entries.forEach((t, i) => {
    const e = ifdAt + 2 + 12 * i;
    v.setUint16(e, t.tag, true);
    v.setUint16(e + 2, t.type, true);
    v.setUint32(e + 4, t.count ?? t.values.length, true);
    if (outOfLine(t)) {
      v.setUint32(e + 8, t.offset ?? valuesAt, true);
      write(valuesAt, t);
      valuesAt += padded(t.values.length * TYPE_SIZE[t.type]);
    } else write(e + 8, t);
  });
  const next = spec.nextIfd === "self" ? ifdAt : (spec.nextIfd ?? 0);
  v.setUint32(ifdAt + 2 + 12 * entries.length, next, true);
  return { bytes: out.subarray(base), ifdAt, nextIfdAt: ifdAt + 2 + 12 * entries.length };
}

/**
 * A `side`² RGB image of deflate tiles without overviews, every tile present: the same bytes
 * each time, so a file of a few hundred KB says what a real one of gigapixels would.
 */
export function flatTiff(side: number, tile = 512): Uint8Array {
  const tiles = Math.ceil(side / tile) ** 2;
  const block = deflateSync(Buffer.alloc(tile * tile * 3, 90));
  return buildTiff({
    width: side,
    height: side,
    tileWidth: tile,
    tileHeight: tile,
    compression: 8,
    tiles: [block],
    edit: (tags, { tileOffsets }) => {
      tags.set(324, { tag: 324, type: 4, values: Array(tiles).fill(tileOffsets[0]) });
      tags.set(325, { tag: 325, type: 4, values: Array(tiles).fill(block.length) });
    },
  });
}
