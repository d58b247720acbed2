// Every grant the admission model makes is leased until REQUEST_TIMEOUT from the request's
// arrival at the edge, and a DO alarm reclaims the leases whose holders never released them, so
// a path that never ends (a hung pipe, a bug) still cannot keep its permits.
import type { AdmissionConfig } from "../../shared/admission-config";
import type { Partition } from "../../shared/cost";
import { HttpError } from "../../shared/errors";
import type { Deadline } from "./coalesce";
import { failing } from "./faults";
import type { DoStats } from "./metrics";
import type { AdmissionModel, Grant } from "./model";

/**
 * Edge → DO: what is left, in ms, of the client request's REQUEST_TIMEOUT, which runs from its
 * arrival at the edge: the admissions made one after another for one request (its metadata,
 * then its image; another region's) share that one deadline. A span, not a time of day, so the
 * Worker's clock and the DO's need not agree; the call's transit is the only slack it adds.
 */
export const TIME_LEFT_HEADER = "x-tessera-time-left-ms";

/** When a request the DO takes now must end: what the edge says is left (REQUEST_TIMEOUT at most, and when it says nothing). */
export function deadlineFrom(timeLeft: string | null, requestTimeoutMs: number, now = Date.now()): number {
  const left = timeLeft !== null && /^\d+$/.test(timeLeft) ? Number(timeLeft) : requestTimeoutMs;
  return now + Math.min(left, requestTimeoutMs);
}

export interface Lease {
  grant: Grant;
  /** Aborts at the request deadline or when the client goes away. */
  signal: AbortSignal;
  /** Aborts when the client goes away (for a coalesced decode, every client waiting for it). */
  client: AbortSignal;
  /** Aborts when the lease is released or expires: what cuts off a decoder that never answers. */
  ended: AbortSignal;
  /** When the request's REQUEST_TIMEOUT ends, epoch ms. */
  deadlineAt: number;
  /** Peak decode bytes the decoder may use: signed into the forwarded request. */
  grantedBytes: number;
  /** Work units the decoder may spend: a tile's partition's most, or for a full all of REQUEST_TIMEOUT. */
  grantedWork: number;
  /** Idempotent: frees the grant and clears the deadline. */
  release(): void;
}

/** What leasing takes from the DO. */
export interface LeaseHost {
  admission: Pick<AdmissionConfig, "requestTimeoutMs" | "queueTimeoutMs" | "largeDecodeThresholdBytes" | "largeDecodeThresholdWork" | "leaseGraceMs">;
  model: AdmissionModel;
  stats: Pick<DoStats, "released" | "leasesExpired" | "requestTimeouts">;
  /** Sizes the model to the live decoders before it admits. */
  resize(): void;
  /** The DO's single alarm. */
  setAlarm(at: number): Promise<void>;
}

export class Leases {
  private readonly held = new Map<number, { deadline: number; expire: () => void }>();
  private nextId = 0;
  private alarmAt: number | undefined;

  constructor(private readonly host: LeaseHost) {}

  /**
   * Admits a request and leases what it was granted until `release` or the alarm at `deadlineAt`
   * (from deadlineFrom); one whose deadline has passed is 408 at once, admitting nothing.
   */
  async lease(partition: Partition, estimate: number, clientSignal: AbortSignal, deadlineAt = Date.now() + this.host.admission.requestTimeoutMs): Promise<Lease> {
    const { requestTimeoutMs, queueTimeoutMs, largeDecodeThresholdBytes, largeDecodeThresholdWork } = this.host.admission;
    const deadline = this.deadline(deadlineAt);
    if (deadline.signal.aborted) throw deadline.signal.reason;
    const signal = AbortSignal.any([deadline.signal, clientSignal]);
    this.host.resize();
    let grant: Grant;
    try {
      grant = await this.host.model.admit(partition, estimate, queueTimeoutMs, signal);
    } catch (err) {
      deadline.clear();
      throw err;
    }
    const id = this.nextId++;
    const ended = new AbortController();
    const release = (expired: boolean) => {
      if (!this.held.delete(id)) return;
      deadline.clear();
      // Every other release comes after the decoder's part is over: only an expiry has one to cut off.
      if (expired) ended.abort(new HttpError("deadline", "the request exceeded REQUEST_TIMEOUT"));
      grant.release();
      this.host.stats.released++;
      if (expired) this.host.stats.leasesExpired++;
    };
    this.held.set(id, { deadline: deadlineAt, expire: () => release(true) });
    try {
      await this.scheduleAlarm(deadlineAt + this.host.admission.leaseGraceMs);
    } catch (err) {
      // Without its alarm a lost release would keep the grant for good: refuse it now.
      release(false);
      throw failing(err);
    }
    // A full is granted its reservation and work up to the deadline (a unit is about a
    // millisecond of one core); a tile anything its partition admits (below the thresholds).
    const full = partition === "full";
    const grantedBytes = full ? estimate : largeDecodeThresholdBytes - 1;
    const grantedWork = full ? requestTimeoutMs : largeDecodeThresholdWork - 1;
    return { grant, signal, client: clientSignal, ended: ended.signal, deadlineAt, grantedBytes, grantedWork, release: () => release(false) };
  }

  /** REQUEST_TIMEOUT, wall-clock from arrival (the wait for a permit included): 408, counted; at once when `at` has passed. */
  deadline(at: number): Deadline {
    const deadline = new AbortController();
    const expire = () => {
      this.host.stats.requestTimeouts++;
      deadline.abort(new HttpError("deadline", "the request exceeded REQUEST_TIMEOUT"));
    };
    if (at <= Date.now()) {
      expire();
      return { signal: deadline.signal, clear: () => {} };
    }
    const timer = setTimeout(expire, at - Date.now());
    return { signal: deadline.signal, clear: () => clearTimeout(timer) };
  }

  /** The DO's alarm: reclaims every lease past its deadline and grace; re-arms for the next one. */
  async alarm(): Promise<void> {
    this.alarmAt = undefined;
    const now = Date.now();
    const grace = this.host.admission.leaseGraceMs;
    let next = Infinity;
    for (const lease of [...this.held.values()]) {
      if (lease.deadline + grace <= now) lease.expire();
      else next = Math.min(next, lease.deadline + grace);
    }
    if (next < Infinity) await this.scheduleAlarm(next);
  }

  private async scheduleAlarm(at: number): Promise<void> {
    // Deadlines only grow, so an armed alarm is never later than the lease just added.
    if (this.alarmAt !== undefined) return;
    this.alarmAt = at;
    try {
      await this.host.setAlarm(at);
    } catch (err) {
      this.alarmAt = undefined; // the next lease arms it again
      throw err;
    }
  }
}
