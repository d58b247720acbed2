// One reserved buffer handed out in slots of any size: a slot given back joins its free
// neighbours, and a request takes the smallest free run that fits (split off its start). Blocks
// of several sizes (512² viewers' tiles, a mosaic's 256², gray and RGBA sources) then share the
// same memory: with slots reused only by blocks of their own size, the spare slots of one size
// stayed resident while blocks of another took memory anew, up to twice the arena.

interface Run {
  start: number;
  end: number;
}

export class Arena {
  /** Free runs in address order, never touching (a given-back slot joins its neighbours). */
  private readonly free: Run[];
  /** The end of the memory handed out so far: below it, a slot reuses a given-back one's pages. */
  private reached = 0;
  /** Slots handed out over memory given back before. */
  recycled = 0;

  constructor(readonly memory: Uint8Array) {
    this.free = memory.length > 0 ? [{ start: 0, end: memory.length }] : [];
  }

  /** Whether `slot` is memory of this arena. */
  holds(slot: Uint8Array): boolean {
    return slot.buffer === this.memory.buffer;
  }

  /** A slot of `bytes`, or undefined when no free run is that long. */
  take(bytes: number): Uint8Array | undefined {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const length = this.free[i].end - this.free[i].start;
      if (length >= bytes && (best < 0 || length < this.free[best].end - this.free[best].start)) best = i;
    }
    if (best < 0) return undefined;
    const run = this.free[best];
    const start = run.start;
    run.start += bytes;
    if (run.start === run.end) this.free.splice(best, 1);
    if (start < this.reached) this.recycled++;
    this.reached = Math.max(this.reached, start + bytes);
    return this.memory.subarray(start, start + bytes);
  }

  /** Takes back a slot from `take` that nothing uses any more. */
  give(slot: Uint8Array): void {
    const start = slot.byteOffset - this.memory.byteOffset;
    const end = start + slot.length;
    let i = 0; // the first run after the slot
    for (let hi = this.free.length; i < hi; ) {
      const mid = (i + hi) >> 1;
      if (this.free[mid].start < start) i = mid + 1;
      else hi = mid;
    }
    const before = this.free[i - 1];
    const after = this.free[i];
    if (before?.end === start && after?.start === end) {
      before.end = after.end;
      this.free.splice(i, 1);
    } else if (before?.end === start) before.end = end;
    else if (after?.start === end) after.start = start;
    else this.free.splice(i, 0, { start, end });
  }
}
