// Validation of a TIFF's structure before geotiff.js parses it: a file is checked before any
// work is spent on it. geotiff.js follows next-IFD offsets without a visited set (an IFD loop never ends)
// and allocates a typed array of every tag's declared count (a count of 2^32 is an instant
// OOM). This walk reads only the header and the IFD entry tables, through the same cached
// header reads geotiff then reuses, and rejects loops, absurd counts, offsets past the end and
// duplicate tags (geotiff.js keeps the last of two, libtiff the first: the file has no one
// meaning) before anything larger than an IFD table is fetched or allocated.

import { sourceFault } from "../source/source";

/** More IFDs than any real pyramid (levels plus masks) has. */
export const MAX_IFDS = 256;
/** Entries of one IFD; real files have a few dozen. */
export const MAX_IFD_ENTRIES = 1024;
/** Bytes of one tag's value (tile tables of a 1M-tile level are 8 MiB). */
export const MAX_TAG_BYTES = 32 * 1024 * 1024;
/** Bytes of all tags' values in the whole file: many tags, each under the cap above, add up. */
export const MAX_TOTAL_TAG_BYTES = 64 * 1024 * 1024;
/** Bytes of JPEGTables (tag 347): real tables (4 quantization, 4 Huffman) take under 2 KiB. */
export const MAX_JPEG_TABLES_BYTES = 64 * 1024;
const JPEG_TABLES = 347;

/** TIFF field type → bytes per value (1 BYTE … 18 IFD8). */
const TYPE_SIZE: Record<number, number> = {
  1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8, 17: 8, 18: 8,
};

export type ReadBytes = (offset: number, length: number) => Promise<Uint8Array>;

/** A 502 saying what is wrong with the file; the source's label goes to the log alone. */
export const malformed = (label: string, what: string) => sourceFault(label, `malformed TIFF: ${what}`);

/** Validates the header and the IFD chain; returns how many IFDs the file has. */
export async function checkTiffStructure(read: ReadBytes, fileSize: number, label: string): Promise<number> {
  if (fileSize < 8) throw malformed(label, `${fileSize} bytes is too short for a TIFF header`);
  const head = view(await read(0, Math.min(16, fileSize)));
  const order = head.getUint16(0, false);
  if (order !== 0x4949 && order !== 0x4d4d) throw malformed(label, "no II/MM byte-order mark");
  const le = order === 0x4949;
  const magic = head.getUint16(2, le);
  if (magic !== 42 && magic !== 43) throw malformed(label, `magic number ${magic} is neither 42 (TIFF) nor 43 (BigTIFF)`);
  const big = magic === 43;
  if (big && (head.byteLength < 16 || head.getUint16(4, le) !== 8)) throw malformed(label, "bad BigTIFF header");
  const entrySize = big ? 20 : 12;
  const countSize = big ? 8 : 2;
  const inlineBytes = big ? 8 : 4;
  const offsetAt = (v: DataView, at: number) => (big ? safe(v.getBigUint64(at, le), label) : v.getUint32(at, le));

  const seen = new Set<number>();
  let totalTagBytes = 0;
  let next = offsetAt(head, big ? 8 : 4);
  while (next !== 0) {
    if (seen.has(next)) throw malformed(label, `IFD chain loops back to offset ${next}`);
    if (seen.size >= MAX_IFDS) throw malformed(label, `more than ${MAX_IFDS} IFDs`);
    seen.add(next);
    if (next + countSize > fileSize) throw malformed(label, `IFD offset ${next} is past the end (${fileSize} bytes)`);
    const count = Number(offsetAtSized(view(await read(next, countSize)), big, le));
    if (count === 0 || count > MAX_IFD_ENTRIES) throw malformed(label, `IFD at ${next} declares ${count} entries`);
    const tableBytes = count * entrySize + (big ? 8 : 4);
    if (next + countSize + tableBytes > fileSize) throw malformed(label, `IFD at ${next} runs past the end of the file`);
    const table = view(await read(next + countSize, tableBytes));
    const tags = new Set<number>();
    for (let i = 0; i < count; i++) {
      const at = i * entrySize;
      const tag = table.getUint16(at, le);
      if (tags.has(tag)) throw malformed(label, `tag ${tag} appears twice in the IFD at ${next}`);
      tags.add(tag);
      const type = table.getUint16(at + 2, le);
      const size = TYPE_SIZE[type];
      if (size === undefined) continue; // unknown types are skipped by readers, as the spec says
      const n = big ? safe(table.getBigUint64(at + 4, le), label) : table.getUint32(at + 4, le);
      const bytes = n * size;
      if (bytes > MAX_TAG_BYTES) throw malformed(label, `tag ${tag} declares ${n} values (${bytes} bytes)`);
      if (tag === JPEG_TABLES && bytes > MAX_JPEG_TABLES_BYTES) throw malformed(label, `JPEGTables of ${bytes} bytes exceeds ${MAX_JPEG_TABLES_BYTES}`);
      totalTagBytes += bytes;
      if (totalTagBytes > MAX_TOTAL_TAG_BYTES) throw malformed(label, `tag data of the file totals more than ${MAX_TOTAL_TAG_BYTES} bytes`);
      if (bytes > inlineBytes) {
        const valueOffset = offsetAt(table, at + (big ? 12 : 8));
        if (valueOffset + bytes > fileSize) throw malformed(label, `tag ${tag}'s values lie past the end of the file`);
      }
    }
    next = offsetAt(table, count * entrySize);
  }
  if (seen.size === 0) throw malformed(label, "no IFD");
  return seen.size;
}

function offsetAtSized(v: DataView, big: boolean, le: boolean): number | bigint {
  return big ? v.getBigUint64(0, le) : v.getUint16(0, le);
}

function safe(v: bigint, label: string): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw malformed(label, `offset ${v} overflows`);
  return Number(v);
}

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
