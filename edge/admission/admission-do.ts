// The admission Durable Object: one per decoder region. It admits each decode through the
// seed-000 model (model.ts), forwards it to the least loaded live decoder, streams the answer
// back, and releases what it holds when the stream ends, on every path: success, decoder
// error, client abort, deadline. Every grant is also a lease with a deadline that a DO alarm
// enforces, so a path that never ends (a hung pipe, a bug) still cannot keep its permits.

import { DurableObject } from "cloudflare:workers";
import { classify, ESTIMATE_HEADER, GrantExceeded, NEEDED_HEADER, PARTITION_HEADER, type Partition } from "../../shared/cost";
import { errorResponse, HttpError } from "../../shared/errors";
import { limitHeaders, signRequest, SIGNATURE_HEADER, type SignedLimits } from "../../shared/protocol";
import { parseHeartbeat } from "../../shared/registration";
import { edgeConfig, type EdgeConfig, type Env } from "../env";
import { DecoderRegistry, type Decoder } from "./decoders";
import { admissionMetrics } from "./metrics";
import { AdmissionModel, type Grant } from "./model";

/** DO-internal paths the edge uses for the metrics page and decoder heartbeats. */
export const METRICS_PATH = "/__admission/metrics";
export const HEARTBEAT_DO_PATH = "/__admission/heartbeat";

/** After its deadline a lease's own path has this long to release it before the alarm does. */
const LEASE_GRACE_MS = 1000;

export interface Lease {
  grant: Grant;
  /** Aborts at the request deadline or when the client goes away. */
  signal: AbortSignal;
  /** When REQUEST_TIMEOUT ends, epoch ms. */
  deadlineAt: number;
  /** Peak decode bytes the decoder may use: signed into the forwarded request. */
  grantedBytes: number;
  /** Idempotent: frees the grant and clears the deadline. */
  release(): void;
}

export interface DoStats {
  released: number;
  leasesExpired: number;
  requestTimeouts: number;
  disagreements: number;
  decoderRetries: number;
}

export class AdmissionDO extends DurableObject<Env> {
  readonly config: EdgeConfig;
  readonly model: AdmissionModel;
  readonly decoders: DecoderRegistry;
  readonly stats: DoStats = { released: 0, leasesExpired: 0, requestTimeouts: 0, disagreements: 0, decoderRetries: 0 };
  private readonly leases = new Map<number, { deadline: number; expire: () => void }>();
  private nextLeaseId = 0;
  private alarmAt: number | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.config = edgeConfig(env);
    const a = this.config.admission;
    if (a.unrecognizedMode !== undefined) {
      console.log(
        JSON.stringify({
          level: "warn",
          msg: `ADMISSION_MODE "${a.unrecognizedMode}" is not advanced or basic; running in basic mode`,
        }),
      );
    }
    this.model = new AdmissionModel(a);
    this.decoders = new DecoderRegistry(a.decoderTtlMs);
    this.resize();
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    try {
      if (url.pathname === METRICS_PATH) {
        this.resize();
        return new Response(admissionMetrics(this, Date.now()), {
          headers: { "content-type": "text/plain; version=0.0.4" },
        });
      }
      if (url.pathname === HEARTBEAT_DO_PATH) {
        this.decoders.heartbeat(parseHeartbeat(await request.text()), Date.now());
        this.resize();
        return new Response(null, { status: 204 });
      }
      const partition: Partition = request.headers.get(PARTITION_HEADER) === "full" ? "full" : "tile";
      const estimate = Number(request.headers.get(ESTIMATE_HEADER) ?? 0) || 0;
      return await this.admitAndForward(url.pathname + url.search, partition, estimate, request.signal);
    } catch (err) {
      return errorResponse(err);
    }
  }

  /**
   * Admits and forwards one decode. When the decoder's precise estimate exceeds what the edge's
   * coarse one was granted, the decoder refuses before reading any pixel and the request is
   * admitted once more, as the model says for the precise figure (it may then wait, be shed or
   * be refused with 413), under the same REQUEST_TIMEOUT from arrival.
   */
  private async admitAndForward(path: string, partition: Partition, estimate: number, client: AbortSignal) {
    const arrivedAt = Date.now();
    try {
      return await this.forward(path, await this.lease(partition, estimate, client, arrivedAt));
    } catch (err) {
      if (!(err instanceof GrantExceeded)) throw err;
      const precise = classify(err.neededBytes, this.config.admission.largeDecodeThresholdBytes);
      if (precise !== partition) this.stats.disagreements++;
      return await this.forward(path, await this.lease(precise, err.neededBytes, client, arrivedAt));
    }
  }

  /** Admits a request and leases what it was granted until `release` or the deadline alarm. */
  async lease(partition: Partition, estimate: number, clientSignal: AbortSignal, arrivedAt = Date.now()): Promise<Lease> {
    const { requestTimeoutMs, queueTimeoutMs, largeDecodeThresholdBytes } = this.config.admission;
    const deadlineAt = arrivedAt + requestTimeoutMs;
    const deadline = new AbortController();
    // The seed's request timeout is wall-clock from arrival, the wait for a permit included.
    const timer = setTimeout(() => {
      this.stats.requestTimeouts++;
      deadline.abort(new HttpError("deadline", "the request exceeded REQUEST_TIMEOUT"));
    }, deadlineAt - Date.now());
    const signal = AbortSignal.any([deadline.signal, clientSignal]);
    this.resize();
    let grant: Grant;
    try {
      grant = await this.model.admit(partition, estimate, queueTimeoutMs, signal);
    } catch (err) {
      clearTimeout(timer);
      throw err;
    }
    const id = this.nextLeaseId++;
    const release = (expired: boolean) => {
      if (!this.leases.delete(id)) return;
      clearTimeout(timer);
      grant.release();
      this.stats.released++;
      if (expired) this.stats.leasesExpired++;
    };
    this.leases.set(id, { deadline: deadlineAt, expire: () => release(true) });
    await this.scheduleAlarm(deadlineAt + LEASE_GRACE_MS);
    // A full is granted its reservation; a tile anything its partition admits (below the threshold).
    const grantedBytes = partition === "full" ? estimate : largeDecodeThresholdBytes - 1;
    return { grant, signal, deadlineAt, grantedBytes, release: () => release(false) };
  }

  /** Reclaims every lease past its deadline and grace; re-arms for the next one. */
  async alarm(): Promise<void> {
    this.alarmAt = undefined;
    const now = Date.now();
    let next = Infinity;
    for (const lease of [...this.leases.values()]) {
      if (lease.deadline + LEASE_GRACE_MS <= now) lease.expire();
      else next = Math.min(next, lease.deadline + LEASE_GRACE_MS);
    }
    if (next < Infinity) await this.scheduleAlarm(next);
  }

  private async scheduleAlarm(at: number): Promise<void> {
    // Deadlines only grow, so an armed alarm is never later than the lease just added.
    if (this.alarmAt !== undefined) return;
    this.alarmAt = at;
    await this.ctx.storage.setAlarm(at);
  }

  /** NTHREADS / MEMORY_LIMIT, or with 0 the sums the live decoders report. */
  private resize(): void {
    const { nthreads, memoryLimit } = this.config.admission;
    const live = this.decoders.totals(Date.now());
    this.model.resize(nthreads || live.capacity, memoryLimit || live.memoryBytes);
  }

  /**
   * Forwards one admitted decode to the least loaded live decoder; if it cannot be reached,
   * forgets it and tries one other (every forwarded request is a GET, so a retry is safe).
   * The lease is released when the answer has streamed, or at once on any failure.
   */
  private async forward(path: string, lease: Lease): Promise<Response> {
    let failed: Decoder | undefined;
    try {
      for (;;) {
        const decoder = this.decoders.pick(Date.now(), failed?.url);
        if (!decoder) {
          if (failed) throw new HttpError("bad_gateway", `decoder unreachable: ${failed.url}`);
          throw new HttpError("overloaded", "no decoder is registered; retry shortly", 1);
        }
        if (failed) this.stats.decoderRetries++;
        const fulls = lease.grant.partition === "full" ? 1 : 0;
        decoder.inFlight++;
        decoder.fullsInFlight += fulls;
        let upstream: Response;
        try {
          // The decoder runs under what was granted here, not under its own defaults.
          const limits: SignedLimits = {
            timeoutMs: String(Math.max(1, lease.deadlineAt - Date.now())),
            grantBytes: String(lease.grantedBytes),
          };
          const signature = await signRequest(this.config.decoderSecret, "GET", path, Date.now(), limits);
          upstream = await fetch(decoder.url + path, {
            headers: { [SIGNATURE_HEADER]: signature, ...limitHeaders(limits) },
            signal: lease.signal,
          });
        } catch (err) {
          decoder.inFlight--;
          decoder.fullsInFlight -= fulls;
          if (lease.signal.aborted) throw lease.signal.reason;
          this.decoders.forget(decoder.url);
          if (failed) throw new HttpError("bad_gateway", `decoder unreachable: ${(err as Error).message}`);
          failed = decoder;
          continue;
        }
        const finish = () => {
          decoder.inFlight--;
          decoder.fullsInFlight -= fulls;
          lease.release();
        };
        const needed = upstream.headers.get(NEEDED_HEADER);
        if (needed !== null) {
          await upstream.body?.cancel();
          finish();
          throw new GrantExceeded(Number(needed));
        }
        this.countDisagreement(lease.grant.partition, upstream.headers.get(ESTIMATE_HEADER));
        if (!upstream.body) {
          finish();
          return upstream;
        }
        // Pass the body through; the permit is held until the last byte is written or the
        // pipe fails (client gone, decoder died, deadline).
        const { readable, writable } = new TransformStream();
        this.ctx.waitUntil(upstream.body.pipeTo(writable, { signal: lease.signal }).catch(() => {}).finally(finish));
        return new Response(readable, { status: upstream.status, headers: upstream.headers });
      }
    } catch (err) {
      lease.release();
      throw err;
    }
  }

  private countDisagreement(edgeVerdict: Partition, precise: string | null): void {
    if (precise === null) return;
    const verdict = classify(Number(precise), this.config.admission.largeDecodeThresholdBytes);
    if (verdict !== edgeVerdict) this.stats.disagreements++;
  }
}
