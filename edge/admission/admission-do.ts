// The admission Durable Object: one per decoder region. It holds a permit for every decode it
// forwards, streams the decoder's answer back, and releases the permit when the stream ends
// on every path: success, decoder error, client abort, deadline.

import { DurableObject } from "cloudflare:workers";
import { errorResponse, HttpError } from "../../shared/errors";
import { signRequest } from "../../shared/protocol";
import { edgeConfig, type EdgeConfig, type Env } from "../env";
import { PermitPool } from "./permit-pool";
import { admissionMetrics } from "./metrics";

/** DO-internal path the edge uses to read the admission gauges. */
export const METRICS_PATH = "/__admission/metrics";

export class AdmissionDO extends DurableObject<Env> {
  private readonly config: EdgeConfig;
  private readonly pool: PermitPool;
  private released = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.config = edgeConfig(env);
    this.pool = new PermitPool(this.config.permits);
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === METRICS_PATH) {
      return new Response(admissionMetrics(this.pool, this.released), {
        headers: { "content-type": "text/plain; version=0.0.4" },
      });
    }
    try {
      const release = await this.pool.acquire(this.config.queueTimeoutMs);
      return await this.forward(url.pathname + url.search, request.signal, () => {
        release();
        this.released++;
      });
    } catch (err) {
      return errorResponse(err);
    }
  }

  /** Forwards one admitted decode; `release` runs exactly once, whatever happens. */
  private async forward(path: string, clientSignal: AbortSignal, release: () => void): Promise<Response> {
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new HttpError("deadline", "decode exceeded the request deadline")),
      this.config.requestTimeoutMs,
    );
    const signal = AbortSignal.any([deadline.signal, clientSignal]);
    const finish = () => {
      clearTimeout(timer);
      release();
    };
    let upstream: Response;
    try {
      upstream = await fetch(this.config.decoderUrl + path, {
        headers: { "x-tessera-signature": await signRequest(this.config.decoderSecret, "GET", path) },
        signal,
      });
    } catch (err) {
      finish();
      if (deadline.signal.aborted) throw deadline.signal.reason;
      throw new HttpError("bad_gateway", `decoder unreachable: ${(err as Error).message}`);
    }
    if (!upstream.body) {
      finish();
      return upstream;
    }
    // Pass the body through; the permit is held until the last byte is written or the
    // pipe fails (client gone, decoder died, deadline).
    const { readable, writable } = new TransformStream();
    this.ctx.waitUntil(upstream.body.pipeTo(writable, { signal }).catch(() => {}).finally(finish));
    return new Response(readable, { status: upstream.status, headers: upstream.headers });
  }
}
