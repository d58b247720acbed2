// The decoded-block cache: decoded tiles kept by byte size (LRU, capped at `maxBytes`), keyed
// by the source's snapshot identity (label, pinned version, object size), the level and the
// block index, so a new version of a source can never be served an old version's pixels.
// One cache is shared by every opened COG in the process; its residency is bounded by its own
// byte cap here, not by the work budget.
//
// Blocks are decoded into memory the cache hands out (`memory`): slots of one arena the size
// of the cap (arena.ts), reserved on first use (the kernel maps its pages as they are first
// written, so residency still follows what is cached), and an evicted block's slot is free again
// once no reader uses it. A block that finds no free run evicts the least recently used blocks
// nothing reads until one is free, so the arena, not new memory, takes blocks of every size. A
// fresh allocation per block made V8 count every new block as external memory, and that growth
// alone set off a full garbage collection every few hundred milliseconds while the cache filled.
// Readers mark the blocks they use (`readers`) until done.

import { Arena } from "./arena";

export interface DecodedBlock {
  /** Interleaved samples, `width * height * channels` of them, of one or more bytes each. */
  data: Uint8Array;
  width: number;
  height: number;
  channels: number;
  /** Reads using `data` now: its memory is reused only once there are none and it is evicted. */
  readers: number;
  /** Out of the cache (evicted, or never admitted). */
  evicted: boolean;
  /** The memory `data` lies in when the cache handed it out (`memory`): reused after eviction. */
  slot?: Uint8Array;
}

/** Slots outside the arena (every block in it was being read) kept for reuse once evicted: a few. */
const MAX_LOOSE_SPARES = 4;

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
  private looseRecycled = 0;
  /** Slots outside the arena no reader uses, by size. */
  private readonly spares = new Map<number, Uint8Array[]>();
  private looseSpares = 0;
  private arena: Arena | undefined;

  constructor(readonly maxBytes: number = DEFAULT_BLOCK_CACHE_BYTES) {}

  get bytes(): number {
    return this.used;
  }

  /** Blocks decoded into the memory of evicted blocks. */
  get recycled(): number {
    return this.looseRecycled + (this.arena?.recycled ?? 0);
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
      this.drop(k, b);
    }
  }

  private drop(key: string, block: DecodedBlock): void {
    this.entries.delete(key);
    this.used -= block.data.byteLength;
    this.evict(block);
  }

  /**
   * `wanted` bytes (or a few more) of memory to decode a block into: a free run of the arena, else one freed by evicting
   * the least recently used blocks nothing reads, else (every block in the arena is being read)
   * memory of its own. Uninitialised: the decoder writes every byte a reader sees.
   */
  memory(wanted: number): Uint8Array {
    // Whole multiples of 8 bytes: every slot then starts aligned for samples of any type, which
    // map reads view in place (a Float64Array needs an offset that is a multiple of 8).
    const bytes = Math.ceil(wanted / 8) * 8;
    this.arena ??= new Arena(reserveArena(this.maxBytes));
    const slot = this.arena.take(bytes) ?? this.makeRoom(this.arena, bytes);
    if (slot) return slot;
    const spare = this.spares.get(bytes)?.pop();
    if (spare) {
      this.looseRecycled++;
      this.looseSpares--;
      return spare;
    }
    return Buffer.allocUnsafeSlow(bytes); // never a slice of Node's shared pool
  }

  private makeRoom(arena: Arena, bytes: number): Uint8Array | undefined {
    if (bytes > arena.memory.length) return undefined;
    for (const [key, block] of this.entries) {
      if (block.readers > 0 || !block.slot || !arena.holds(block.slot)) continue;
      this.drop(key, block);
      const slot = arena.take(bytes);
      if (slot) return slot;
    }
    return undefined;
  }

  /** A reader is done with `block`'s data. */
  release(block: DecodedBlock): void {
    if (--block.readers === 0 && block.evicted) this.spare(block);
  }

  private evict(block: DecodedBlock): void {
    block.evicted = true;
    if (block.readers === 0) this.spare(block);
  }

  private spare(block: DecodedBlock): void {
    if (block.slot) this.reuse(block.slot);
    block.slot = undefined; // spared once, however often it is released
  }

  /** Takes back a slot from `memory` nothing uses: every arena slot, a few others. */
  reuse(slot: Uint8Array): void {
    if (this.arena?.holds(slot)) return this.arena.give(slot);
    if (this.looseSpares >= MAX_LOOSE_SPARES) return;
    this.looseSpares++;
    const list = this.spares.get(slot.length) ?? [];
    list.push(slot);
    this.spares.set(slot.length, list);
  }
}

/** Zero pages until written (no resident cost yet); none when the address space refuses it. */
function reserveArena(bytes: number): Uint8Array {
  try {
    return new Uint8Array(bytes);
  } catch {
    return new Uint8Array(0); // every block then gets memory of its own, as without an arena
  }
}
