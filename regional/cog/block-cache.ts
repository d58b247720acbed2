// The decoded-block cache: decoded tiles kept by byte size (LRU, capped at `maxBytes`), keyed
// by the source's snapshot identity (label, pinned version, object size), the level and the
// block index, so a new version of a source can never be served an old version's pixels.
// One cache is shared by every opened COG in the process; its residency is bounded by its own
// byte cap here, not by the work budget.

export interface DecodedBlock {
  /** Interleaved samples, `width * height * channels` bytes. */
  data: Uint8Array;
  width: number;
  height: number;
  channels: number;
}

/** 256 MiB: about 340 decoded 512² RGB blocks, a whole 8192² level. */
export const DEFAULT_BLOCK_CACHE_BYTES = 256 * 1024 * 1024;

/** The identity part of a block key: changes whenever the bytes of the source may differ. */
export const snapshotIdentity = (s: { label: string; version: string; size: number }) => `${s.label}@${s.version}#${s.size}`;

export class DecodedBlockCache {
  private readonly entries = new Map<string, DecodedBlock>();
  private used = 0;
  hits = 0;
  misses = 0;
  /** Blocks decoded and offered to the cache (cached unless larger than the cap). */
  decoded = 0;

  constructor(readonly maxBytes: number = DEFAULT_BLOCK_CACHE_BYTES) {}

  get bytes(): number {
    return this.used;
  }

  get(key: string): DecodedBlock | undefined {
    const block = this.entries.get(key);
    if (!block) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.entries.delete(key);
    this.entries.set(key, block);
    return block;
  }

  set(key: string, block: DecodedBlock): void {
    this.decoded++;
    const size = block.data.byteLength;
    if (size > this.maxBytes) return; // would evict everything and still not fit
    const old = this.entries.get(key);
    if (old) {
      this.used -= old.data.byteLength;
      this.entries.delete(key);
    }
    this.entries.set(key, block);
    this.used += size;
    for (const [k, b] of this.entries) {
      if (this.used <= this.maxBytes) break;
      this.entries.delete(k);
      this.used -= b.data.byteLength;
    }
  }
}
