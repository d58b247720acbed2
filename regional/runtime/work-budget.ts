// The work budget (active work owns its memory): one byte allowance shared by
// every read and render that should share a limit. Reservations never block: over the limit a
// reservation fails at once with a ResourceLimitError (503 + Retry-After). Only a public
// request's single retry waits, in the exclusive line of its partition, and under its original
// deadline. As in the admission DO, tiles never wait behind fulls: a tile is refused or queued
// only by tiles, and waiting tiles are served first.
//
// This is an active-work allowance, not an RSS ceiling: the decoded-block cache, finished
// answers being written, libvips/allocator overhead and Node's own heap are owned elsewhere.

import type { Partition } from "../../shared/cost";
import { HttpError } from "../../shared/errors";
import { abortReason } from "../../shared/abort";

export const DEFAULT_WORK_BUDGET_BYTES = 512 * 1024 * 1024;

/** Transient: the allowance is taken by other work right now (503, retry soon). */
export class ResourceLimitError extends HttpError {
  constructor(message: string) {
    super("overloaded", message, 1);
    this.name = "ResourceLimitError";
  }
}

interface Lease {
  bytes: number;
  owners: number;
}

/**
 * One owner's hold on a reservation. `share()` adds an owner (a background job, a shared
 * decode); the bytes return to the budget when the last owner releases.
 */
export class Reservation {
  private released = false;

  constructor(
    private readonly budget: WorkBudget,
    private readonly lease: Lease,
  ) {}

  get bytes(): number {
    return this.lease.bytes;
  }

  share(): Reservation {
    if (this.released) throw new Error("sharing a released reservation");
    this.lease.owners++;
    return new Reservation(this.budget, this.lease);
  }

  /**
   * Moves `bytes` (at most all it holds) out of this reservation into one of their own: what
   * outlives the work that made it (an encoded answer being written) keeps its share of the
   * work's estimate, and the budget's total never grows.
   */
  carve(bytes: number): Reservation {
    const moved = Math.min(bytes, this.lease.bytes);
    this.lease.bytes -= moved;
    return new Reservation(this.budget, { bytes: moved, owners: 1 });
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    if (--this.lease.owners === 0) this.budget.give(this.lease.bytes);
  }
}

interface Waiter {
  bytes: number;
  grant: (r: Reservation) => void;
}

export class WorkBudget {
  private used = 0;
  private peak = 0;
  /** Retries waiting for exclusive admission, first come first served per partition. */
  private readonly lines: Record<Partition, Waiter[]> = { tile: [], full: [] };
  private static shared: WorkBudget | undefined;

  constructor(readonly limitBytes: number = DEFAULT_WORK_BUDGET_BYTES) {
    if (!Number.isSafeInteger(limitBytes) || limitBytes <= 0) throw new RangeError("work budget must be > 0 bytes");
  }

  /** The process-wide default allowance (512 MiB) for components not given their own. */
  static global(): WorkBudget {
    return (WorkBudget.shared ??= new WorkBudget());
  }

  get usedBytes(): number {
    return this.used;
  }
  get peakBytes(): number {
    return this.peak;
  }
  /** Retries currently waiting for exclusive admission. */
  get waiting(): number {
    return this.lines.tile.length + this.lines.full.length;
  }

  /**
   * Reserves `bytes` now or throws: 413 when `bytes` can never fit, ResourceLimitError (503)
   * when the allowance is taken or a retry it may not overtake is waiting (so newcomers cannot
   * starve it): any retry for a full, a tile's retry for a tile.
   */
  tryReserve(bytes: number, what: string, partition: Partition = "full"): Reservation {
    this.checkFits(bytes, what);
    if (this.ahead(partition) > 0 || this.used + bytes > this.limitBytes) {
      throw new ResourceLimitError(
        `${what} needs ${mib(bytes)} of work memory; ${mib(this.limitBytes - this.used)} of ${mib(this.limitBytes)} free`,
      );
    }
    return this.take(bytes);
  }

  /**
   * Waits, first in first out, until `bytes` fit, then reserves them ahead of any newcomer.
   * For a public request's single retry; `signal` (its deadline, its client) ends the wait.
   */
  reserveExclusive(bytes: number, what: string, signal: AbortSignal, partition: Partition = "full"): Promise<Reservation> {
    this.checkFits(bytes, what);
    signal.throwIfAborted();
    if (this.ahead(partition) === 0 && this.used + bytes <= this.limitBytes) return Promise.resolve(this.take(bytes));
    const line = this.lines[partition];
    return new Promise<Reservation>((resolve, reject) => {
      const waiter: Waiter = {
        bytes,
        grant: (r) => {
          signal.removeEventListener("abort", onAbort);
          resolve(r);
        },
      };
      const onAbort = () => {
        const i = line.indexOf(waiter);
        if (i >= 0) line.splice(i, 1);
        reject(abortReason(signal));
        this.admitWaiting(); // the next in line may fit now
      };
      signal.addEventListener("abort", onAbort, { once: true });
      line.push(waiter);
    });
  }

  /**
   * Takes `bytes` the admission DO has already granted: the DO's limit replaces this one, so
   * neither the allowance nor the exclusive line refuses or delays it. It still counts, so
   * direct requests without a grant see the memory in use.
   */
  takeGranted(bytes: number): Reservation {
    return this.take(bytes);
  }

  /** Called by the last owner of a reservation. */
  give(bytes: number): void {
    this.used -= bytes;
    this.admitWaiting();
  }

  /** Waiting retries a newcomer of `partition` may not overtake. */
  private ahead(partition: Partition): number {
    return partition === "tile" ? this.lines.tile.length : this.waiting;
  }

  private admitWaiting(): void {
    for (const line of [this.lines.tile, this.lines.full]) {
      while (line.length > 0 && this.used + line[0].bytes <= this.limitBytes) {
        const waiter = line.shift()!;
        waiter.grant(this.take(waiter.bytes));
      }
      if (line.length > 0) return; // tiles first: no full is admitted past a waiting tile
    }
  }

  private checkFits(bytes: number, what: string): void {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new HttpError("too_large", `${what}: work size overflows`);
    if (bytes > this.limitBytes) {
      throw new HttpError("too_large", `${what} needs ${mib(bytes)}, more than the whole ${mib(this.limitBytes)} work budget; a smaller size or region fits (jp2 and png hold the most per pixel)`);
    }
  }

  private take(bytes: number): Reservation {
    this.used += bytes;
    this.peak = Math.max(this.peak, this.used);
    return new Reservation(this, { bytes, owners: 1 });
  }
}

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

/**
 * A public request's admission: try once; if the allowance is taken, wait for exclusive
 * admission and retry once, all under the request's own signal (deadline and client), in the
 * line of its partition (a request with the DO's grant never comes here). Direct low-level
 * callers use `tryReserve` and stay fail-fast.
 */
export async function admitWork(
  budget: WorkBudget,
  bytes: number,
  partition: Partition,
  what: string,
  signal: AbortSignal,
  onRetry?: () => void,
): Promise<Reservation> {
  try {
    return budget.tryReserve(bytes, what, partition);
  } catch (e) {
    if (!(e instanceof ResourceLimitError)) throw e;
    onRetry?.();
    return budget.reserveExclusive(bytes, what, signal, partition);
  }
}
