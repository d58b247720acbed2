// The two-partition admission model (tiles and fulls), pure bookkeeping (no I/O): two FIFO semaphores (global
// permits, full-partition permits), the full partition's decode-memory budget, the mode, and
// the counters the metrics page shows. The admission DO drives it; tests drive it directly.
//
//   tile: global permit only (bursts into idle full capacity; waits only on the global queue)
//   full: full-partition permit first, then a global one, so at most full_max fulls ever hold
//         or wait for global permits and tile_min of them stay free for tiles (the tile floor);
//         then a non-blocking reservation of its estimated peak bytes against full_mem, held
//         on one decoder whose share of full memory has room for them (the one it is sent to).
// In basic mode fulls take only the global permit; the full cap and the memory budget are
// evaluated anyway and counted as shadow rejections instead of enforced.

import { HttpError } from "../../shared/errors";
import { fullMemory, partitions, type AdmissionMode } from "../../shared/admission-config";
import type { Decoder, DecoderRegistry, FullHold } from "./decoders";

export type Partition = "tile" | "full";

/** A counting semaphore whose waiters are served strictly in arrival order. */
export class FifoSemaphore {
  private held = 0;
  private readonly queue: { grant: () => void }[] = [];

  constructor(private capacity: number) {}

  get inUse(): number {
    return this.held;
  }
  get waiting(): number {
    return this.queue.length;
  }
  get total(): number {
    return this.capacity;
  }

  /** Takes a permit if one is free now and nobody waits for it (no overtaking). */
  tryAcquire(): boolean {
    if (this.queue.length > 0 || this.held >= this.capacity) return false;
    this.held++;
    return true;
  }

  /** Resolves once a permit is held; rejects with the signal's reason if it aborts first. */
  acquire(signal: AbortSignal): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.queue.splice(this.queue.indexOf(waiter), 1);
        reject(signal.reason);
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  release(): void {
    this.held--;
    this.drain();
  }

  /** Auto-sized pools follow the decoders; permits above a shrunk capacity drain as released. */
  resize(capacity: number): void {
    this.capacity = capacity;
    this.drain();
  }

  private drain(): void {
    while (this.queue.length > 0 && this.held < this.capacity) {
      this.held++;
      this.queue.shift()!.grant();
    }
  }
}

export interface ModelSettings {
  mode: AdmissionMode;
  tilesThreadRatio: number;
  tilesMemoryRatio: number;
  /** Fulls parked at once (advanced); beyond it a full is shed at once. Tiles are exempt. */
  fullMaxWaiting: number;
  /** ADMISSION_SHARDS: how many DOs split each decoder's full memory (the 413 says so). */
  shards: number;
}

/** What an admitted request holds; `release` is idempotent and frees everything. */
export interface Grant {
  readonly partition: Partition;
  readonly reservedBytes: number;
  /** The decoder a full's bytes are held on, where it must be sent (a tile: undefined, the least loaded takes it). */
  readonly decoder: Decoder | undefined;
  /** A full whose decoder is gone (unreachable, draining): holds its bytes on another, on the same terms, and returns it. */
  moveOn(): Decoder | undefined;
  release(): void;
}

export class AdmissionModel {
  readonly global = new FifoSemaphore(0);
  readonly full = new FifoSemaphore(0);
  nthreads = 0;
  tileMin = 0;
  fullMax = 0;
  memoryLimit = 0;
  fullMem = 0;
  /** The most one full may be granted: this DO's share of the largest decoder's full memory (none known: no cap). */
  fullRequestMax = Infinity;
  reservedBytes = 0;
  /** Basic mode: the part of reservedBytes advanced would hold, which its memory shadow is measured against. */
  private shadowHeldBytes = 0;
  /**
   * Held full-partition permits (full_in_use), waiting for a global one or not; in
   * basic mode, where fulls take none, the admitted fulls.
   */
  fullInUse = 0;
  fullWaiting = 0;
  tileWaiting = 0;
  readonly counters = {
    tileShed: 0,
    fullShed: 0,
    fullShadowRejected: 0,
    memoryRejected: 0,
    memoryTooLarge: 0,
    memoryShadowRejected: 0,
    memoryShadowTooLarge: 0,
  };

  /** `decoders` holds each full's bytes on the decoder it goes to. */
  constructor(
    readonly settings: ModelSettings,
    private readonly decoders: Pick<DecoderRegistry, "holdFull">,
  ) {}

  /**
   * Sets n and the memory envelope (fixed by config, or the live decoders' sums), and the
   * largest share of one live decoder's full memory, which bounds a single grant (none: no bound).
   */
  resize(nthreads: number, memoryLimit: number, largestFullShare?: number): void {
    this.nthreads = nthreads;
    ({ tileMin: this.tileMin, fullMax: this.fullMax } = partitions(nthreads, this.settings.tilesThreadRatio));
    this.memoryLimit = memoryLimit;
    this.fullMem = fullMemory(memoryLimit, this.settings.tilesMemoryRatio);
    this.fullRequestMax = largestFullShare ?? Infinity;
    this.global.resize(nthreads);
    this.full.resize(this.fullMax);
  }

  /**
   * Admits one request of `partition` whose estimated peak decode memory is `estimateBytes`,
   * waiting (FIFO) at most `queueTimeoutMs`. Throws 503 (shed, transient) or 413 (can never
   * fit), or the signal's reason if the client goes away while waiting.
   */
  async admit(partition: Partition, estimateBytes: number, queueTimeoutMs: number, signal: AbortSignal): Promise<Grant> {
    const advanced = this.settings.mode === "advanced";
    // No permits at all (no live decoder): nothing could free one in time, and the budget it
    // would be measured against is unknown, so this is transient even for a large full.
    if (this.nthreads === 0) {
      this.countShed(partition);
      throw shed(partition, "no decode permits exist (no live decoder)");
    }
    // In basic mode a full is judged as advanced would judge it, and counted once, for the
    // first reason advanced would refuse it (413, then the full cap, then the budget).
    let shadowed = false;
    if (partition === "full") shadowed = this.checkFitsAtAll(estimateBytes, advanced);
    const permits = await this.takePermits(partition, advanced, shadowed, queueTimeoutMs, signal);
    return this.reserve(partition, estimateBytes, advanced, permits);
  }

  /**
   * Takes the permits `partition` needs, in order, waiting at most `queueTimeoutMs` for them
   * all; those taken are given back if a later one is not. Returns how to give them back, and
   * whether the full has been counted as a shadow rejection by now.
   */
  private async takePermits(partition: Partition, advanced: boolean, shadowed: boolean, queueTimeoutMs: number, signal: AbortSignal): Promise<Permits> {
    const queue = queueTimeout(partition, queueTimeoutMs, signal);
    let fullPermit = false;
    let globalPermit = false;
    let countedInUse = false;
    const countInUse = () => {
      countedInUse = true;
      this.fullInUse++;
    };
    const giveBack = () => {
      if (globalPermit) this.global.release();
      if (fullPermit) this.full.release();
      if (countedInUse) this.fullInUse--;
    };
    try {
      if (partition === "tile") {
        globalPermit = await this.wait("tileWaiting", this.global, queue.signal);
      } else {
        if (advanced) {
          if (this.fullMax === 0) throw shed("full", "full_max is 0: no full-image decode is admitted");
          if (this.fullWaiting >= this.settings.fullMaxWaiting && !this.fullPartitionFree()) {
            throw shed("full", "too many full-image requests are waiting");
          }
          fullPermit = await this.wait("fullWaiting", this.full, queue.signal);
          countInUse();
        } else if (!shadowed && this.fullMax === 0) {
          this.counters.fullShadowRejected++;
          shadowed = true;
        }
        globalPermit = await this.wait("fullWaiting", this.global, queue.signal);
        // Basic mode takes no full-partition permit: an admitted full counts as holding one, and
        // one admitted while full_max of them run is one advanced would not have run (queued or shed).
        if (!advanced && !shadowed && this.fullInUse >= this.fullMax) {
          this.counters.fullShadowRejected++;
          shadowed = true;
        }
        if (!advanced) countInUse();
      }
    } catch (err) {
      giveBack();
      if (err instanceof HttpError && err.kind === "overloaded") this.countShed(partition);
      throw err;
    } finally {
      queue.clear();
    }
    return { giveBack, shadowed };
  }

  /**
   * Reserves a full's estimated bytes against full_mem and on a decoder whose share has room, once
   * it holds its permits (in basic mode, a budget or decoders advanced would find in use are
   * counted, not enforced), and hands out the grant.
   */
  private reserve(partition: Partition, estimateBytes: number, advanced: boolean, { giveBack, shadowed }: Permits): Grant {
    if (partition === "tile") return this.grant(partition, 0, undefined, advanced, giveBack);
    if (advanced) {
      const overBudget = this.reservedBytes + estimateBytes > this.fullMem;
      const hold = overBudget ? undefined : this.holdOn(estimateBytes, true, true);
      if (hold) return this.grant(partition, estimateBytes, hold, advanced, giveBack);
      giveBack();
      this.counters.memoryRejected++;
      const why = overBudget ? "the full-image decode memory budget is in use" : "no decoder has room for this full-image decode's memory now";
      throw new HttpError("overloaded", `${why}; retry shortly`, 1);
    }
    // Basic mode: counted against the budget and a decoder's share as advanced would hold it, or not at all.
    const wanted = !shadowed && this.shadowHeldBytes + estimateBytes <= this.fullMem;
    const hold = this.holdOn(estimateBytes, wanted, false);
    if (!shadowed && !hold?.counted) this.counters.memoryShadowRejected++;
    return this.grant(partition, estimateBytes, hold, advanced, giveBack);
  }

  /**
   * Holds a full's bytes on a decoder: counted against its share when `counted` (in advanced
   * mode only so); in basic mode else on the least loaded, uncounted.
   */
  private holdOn(bytes: number, counted: boolean, advanced: boolean): FullHold | undefined {
    const now = Date.now();
    const hold = counted ? this.decoders.holdFull(now, bytes, true) : undefined;
    return hold ?? (advanced ? undefined : this.decoders.holdFull(now, bytes, false));
  }

  /** The grant of `bytes` held by `hold` (none for a tile); reservedBytes and the shadow follow it until release. */
  private grant(partition: Partition, bytes: number, hold: FullHold | undefined, advanced: boolean, giveBack: () => void): Grant {
    let current = hold;
    // Basic mode measures its shadow against the bytes counted on decoders: what advanced would hold.
    const counted = () => (current?.counted ? bytes : 0);
    this.reservedBytes += bytes;
    this.shadowHeldBytes += counted();
    let released = false;
    return {
      partition,
      reservedBytes: bytes,
      get decoder() {
        return current?.decoder;
      },
      moveOn: () => {
        this.shadowHeldBytes -= counted();
        current?.release();
        current = partition === "full" ? this.holdOn(bytes, hold?.counted ?? false, advanced) : undefined;
        this.shadowHeldBytes += counted();
        return current?.decoder;
      },
      release: () => {
        if (released) return;
        released = true;
        this.reservedBytes -= bytes;
        this.shadowHeldBytes -= counted();
        current?.release();
        giveBack();
      },
    };
  }

  /**
   * 413 when one request alone exceeds full_mem (a full_mem of 0 fits nothing), or this DO's
   * share of the largest decoder's full memory, the most one request can run in. In basic mode
   * it is counted instead; returns whether it was.
   */
  private checkFitsAtAll(estimateBytes: number, advanced: boolean): boolean {
    const fits = Math.min(this.fullMem, this.fullRequestMax);
    if (estimateBytes <= fits && this.fullMem > 0) return false;
    if (!advanced) {
      this.counters.memoryShadowTooLarge++;
      return true;
    }
    this.counters.memoryTooLarge++;
    throw new HttpError(
      "too_large",
      fits < this.fullMem
        ? `this request needs an estimated ${estimateBytes} bytes to decode, more than the ${fits}-byte full-image share of the largest decoder${this.ofShards()}`
        : `this request needs an estimated ${estimateBytes} bytes to decode, more than the ${this.fullMem}-byte full-image budget`,
    );
  }

  /** Why a decoder's share is a part of its full memory, when it is. */
  private ofShards(): string {
    const n = this.settings.shards;
    return n > 1 ? ` that this admission shard may use (ADMISSION_SHARDS = ${n} split each decoder's full-image memory between them)` : "";
  }

  private countShed(partition: Partition): void {
    this.counters[partition === "tile" ? "tileShed" : "fullShed"]++;
  }

  private fullPartitionFree(): boolean {
    return this.full.waiting === 0 && this.full.inUse < this.full.total;
  }

  private async wait(gauge: "tileWaiting" | "fullWaiting", sem: FifoSemaphore, signal: () => AbortSignal): Promise<true> {
    if (sem.tryAcquire()) return true;
    this[gauge]++;
    try {
      await sem.acquire(signal());
      return true;
    } finally {
      this[gauge]--;
    }
  }
}

/** The permits an admitted request holds, and whether it was counted as a shadow rejection. */
interface Permits {
  giveBack(): void;
  shadowed: boolean;
}

/**
 * QUEUE_TIMEOUT for one admission. Its timer and signal are made only when a permit is not
 * free at once (a tile on an idle partition takes its permit without either).
 */
function queueTimeout(partition: Partition, ms: number, signal: AbortSignal): { signal: () => AbortSignal; clear(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let bounded: AbortSignal | undefined;
  return {
    signal: () => {
      if (!bounded) {
        const timeout = new AbortController();
        timer = setTimeout(() => timeout.abort(shed(partition, "no decode permit became free in time")), ms);
        bounded = AbortSignal.any([signal, timeout.signal]);
      }
      return bounded;
    },
    clear: () => clearTimeout(timer),
  };
}

const shed = (partition: Partition, why: string) =>
  new HttpError("overloaded", `${why} (${partition} partition); retry shortly`, 1);
