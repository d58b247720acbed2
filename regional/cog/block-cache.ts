// The decoded-block cache: decoded tiles kept by byte size (LRU, capped at `maxBytes`), keyed
// by the source's snapshot identity (label, pinned version, object size), the level and the
// block index, so a new version of a source can never be served an old version's pixels.
// One cache is shared by every opened COG in the process; its residency is bounded by its own
// byte cap here, not by the work budget.
//
// An evicted block's memory is reused for the next block decoded (a few spares are kept, once
// no reader uses them): a new block otherwise costs fresh memory the kernel must fault in and
// V8 must count, and that churn alone set off a full garbage collection every few hundred
// milliseconds under load. Readers mark the blocks they use (`readers`) until they are done.
export interface DecodedBlock {
  /** Interleaved samples, `width * height * channels` bytes. */
  data: Uint8Array;
  width: number;
  height: number;
  channels: number;
  /** Reads using `data` now: its memory is reused only once there are none and it is evicted. */
  readers: number;
  /** Out of the cache (evicted, or never admitted). */
  evicted: boolean;
}

/** Evicted blocks' memory kept for reuse, beyond the cap: a few blocks, one per decode in progress. */
const MAX_SPARES = 4;

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
  /** Memory handed out again from evicted blocks. */
  recycled = 0;
  private readonly spares: ArrayBuffer[] = [];
  /** Memory this cache handed out: only that is ever reused (a block may be a view of anything). */
  private readonly owned = new WeakSet<ArrayBuffer>();

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
    if (size > this.maxBytes) return this.evict(block); // would evict everything and still not fit
    const old = this.entries.get(key);
    if (old === block) return;
    if (old) {
      this.used -= old.data.byteLength;
      this.entries.delete(key);
      this.evict(old);
    }
    this.entries.set(key, block);
    this.used += size;
    for (const [k, b] of this.entries) {
      if (this.used <= this.maxBytes) break;
      this.entries.delete(k);
      this.used -= b.data.byteLength;
      this.evict(b);
    }
  }

  /** `bytes` of memory to decode a block into: an evicted block's when one of that size is spare. */
  memory(bytes: number): Uint8Array {
    const i = this.spares.findIndex((b) => b.byteLength === bytes);
    if (i >= 0) {
      this.recycled++;
      return new Uint8Array(this.spares.splice(i, 1)[0]);
    }
    // Uninitialised (the decoder writes every byte) and never a slice of Node's shared pool.
    const fresh = Buffer.allocUnsafeSlow(bytes);
    this.owned.add(fresh.buffer);
    return fresh;
  }

  /** A reader is done with `block`'s data. */
  release(block: DecodedBlock): void {
    if (--block.readers === 0 && block.evicted) this.spare(block);
  }

  private evict(block: DecodedBlock): void {
    block.evicted = true;
    if (block.readers === 0) this.spare(block);
  }

  /** Keeps an unused block's whole memory (its data and any slack after it) for the next decode. */
  private spare(block: DecodedBlock): void {
    const memory = block.data.buffer as ArrayBuffer;
    if (this.spares.length < MAX_SPARES && this.owned.has(memory) && !this.spares.includes(memory)) this.spares.push(memory);
  }
}
