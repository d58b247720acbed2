// The header reads geotiff.js makes, as store reads: what the source read when it was opened is
// never read again, and the blocks one header read spans are fetched at once, not one after another.
import { describe, expect, it } from "vitest";
import { GeoTiffSource } from "../../regional/cog/geotiff-source";
import type { Source } from "../../regional/source/source";

const BLOCK = 1024;
const SIZE = 8 * BLOCK;
const bytes = Uint8Array.from({ length: SIZE }, (_, i) => i % 251);

/** A source whose opening read brought its first `opened` bytes, recording every read after it. */
function store(opened: number) {
  const reads: { offset: number; length: number; at: number }[] = [];
  let inFlight = 0;
  const source: Source = {
    version: "v1",
    size: SIZE,
    label: "test",
    firstBytes: bytes.slice(0, opened),
    async read(offset, length) {
      reads.push({ offset, length, at: inFlight++ });
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return bytes.slice(offset, offset + length);
    },
    close: async () => {},
  };
  return { reads, adapter: new GeoTiffSource(source, { blockSize: BLOCK }) };
}

describe("header reads over a source opened with its first bytes", () => {
  it("serves what the opening read brought without another store read", async () => {
    const { reads, adapter } = store(2 * BLOCK);
    expect(await adapter.read(0, 16)).toEqual(bytes.subarray(0, 16));
    expect(await adapter.read(BLOCK - 8, 2 * BLOCK - (BLOCK - 8))).toEqual(bytes.subarray(BLOCK - 8, 2 * BLOCK));
    expect(reads).toEqual([]);
  });

  it("fetches only the block past them for a read that straddles their end", async () => {
    const { reads, adapter } = store(2 * BLOCK);
    expect(await adapter.read(2 * BLOCK - 8, 16)).toEqual(bytes.subarray(2 * BLOCK - 8, 2 * BLOCK + 8));
    expect(reads.map((r) => r.offset)).toEqual([2 * BLOCK]);
  });

  it("fetches the blocks of one read at once", async () => {
    const { reads, adapter } = store(0);
    expect(await adapter.read(3 * BLOCK - 8, 16)).toEqual(bytes.subarray(3 * BLOCK - 8, 3 * BLOCK + 8));
    expect(reads).toEqual([
      { offset: 2 * BLOCK, length: BLOCK, at: 0 },
      { offset: 3 * BLOCK, length: BLOCK, at: 1 }, // sent while the first was still out
    ]);
  });
});
