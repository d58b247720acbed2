// The two-partition admission model (tiles and fulls), pure bookkeeping (no I/O): two FIFO semaphores (global
// permits, full-partition permits), the full partition's decode-memory budget, the mode, and
// the counters the metrics page shows. The admission DO drives it; tests drive it directly.
//
//   tile: global permit only (bursts into idle full capacity; waits only on the global queue)
//   full: full-partition permit first, then a global one, so at most full_max fulls ever hold
//         or wait for global permits and tile_min of them stay free for tiles (the tile floor);
//         then a non-blocking reservation of its estimated peak bytes against full_mem.
// In basic mode fulls take only the global permit; the full cap and the memory budget are
// evaluated anyway and counted as shadow rejections instead of enforced.

import { HttpError } from "../../shared/errors";
import { fullMemory, partitions, type AdmissionMode } from "../../shared/admission-config";

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
}

/** What an admitted request holds; `release` is idempotent and frees everything. */
export interface Grant {
  readonly partition: Partition;
  readonly reservedBytes: number;
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
  /** The most one full may be granted: the full share of the largest decoder (none known: no cap). */
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

  constructor(readonly settings: ModelSettings) {}

  /**
   * Sets n and the memory envelope (fixed by config, or the live decoders' sums), and the memory
   * of the largest live decoder, which bounds a single grant (0: unknown, no bound).
   */
  resize(nthreads: number, memoryLimit: number, largestDecoderBytes = 0): void {
    this.nthreads = nthreads;
    ({ tileMin: this.tileMin, fullMax: this.fullMax } = partitions(nthreads, this.settings.tilesThreadRatio));
    this.memoryLimit = memoryLimit;
    this.fullMem = fullMemory(memoryLimit, this.settings.tilesMemoryRatio);
    this.fullRequestMax = largestDecoderBytes > 0 ? fullMemory(largestDecoderBytes, this.settings.tilesMemoryRatio) : Infinity;
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
   * Reserves a full's estimated bytes against full_mem once it holds its permits (in basic
   * mode a budget advanced would find in use is counted, not enforced), and hands out the grant.
   */
  private reserve(partition: Partition, estimateBytes: number, advanced: boolean, { giveBack, shadowed }: Permits): Grant {
    let reserved = 0;
    // Basic mode: the bytes advanced would hold for this full (none for one it would have refused).
    let shadowHeld = 0;
    if (partition === "full") {
      if (advanced && this.reservedBytes + estimateBytes > this.fullMem) {
        giveBack();
        this.counters.memoryRejected++;
        throw new HttpError("overloaded", "the full-image decode memory budget is in use; retry shortly", 1);
      }
      if (!advanced && !shadowed) {
        if (this.shadowHeldBytes + estimateBytes > this.fullMem) this.counters.memoryShadowRejected++;
        else shadowHeld = estimateBytes;
      }
      reserved = estimateBytes;
      this.reservedBytes += reserved;
      this.shadowHeldBytes += shadowHeld;
    }
    let released = false;
    return {
      partition,
      reservedBytes: reserved,
      release: () => {
        if (released) return;
        released = true;
        this.reservedBytes -= reserved;
        this.shadowHeldBytes -= shadowHeld;
        giveBack();
      },
    };
  }

  /**
   * 413 when one request alone exceeds full_mem (a full_mem of 0 fits nothing), or the full
   * share of the largest decoder, the most one request can run in. In basic mode it is counted
   * instead; returns whether it was.
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
        ? `this request needs an estimated ${estimateBytes} bytes to decode, more than the ${fits}-byte full-image share of the largest decoder`
        : `this request needs an estimated ${estimateBytes} bytes to decode, more than the ${this.fullMem}-byte full-image budget`,
    );
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
