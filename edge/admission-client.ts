// The edge's only way to a decoder: through an admission Durable Object, the shard of the
// region that serves the source (admission/placement.ts).
import { thresholdsOf } from "../shared/admission-config";
import { classify, ESTIMATE_HEADER, ESTIMATE_WORK_HEADER, PARTITION_HEADER, type Cost as Estimate, type Partition } from "../shared/cost";
import { errorFromResponse, HttpError } from "../shared/errors";
import { X_REQUEST_ID } from "../shared/request-id";
import { TIME_LEFT_HEADER } from "./admission/leases";
import { NO_DECODERS_HEADER, shardStub, sourceShards, type Shard } from "./admission/placement";
import { edgeConfig, type EdgeConfig, type Env } from "./env";
import type { ForClient } from "./request-id";
import { TIER_KEY_HEADER, TIER_SOURCE_HEADER, type TierEntry } from "./admission/upper-tier";

/**
 * One call to one admission DO. A DO that cannot take the call (overloaded, reset, being
 * replaced) is a transient condition: 503 + Retry-After, never a 502.
 */
export async function callShard(env: Env, shard: Shard, request: Request): Promise<Response> {
  try {
    return await shardStub(env, edgeConfig(env).placement, shard).fetch(request);
  } catch (err) {
    if (request.signal.aborted) throw err; // the client is gone: nobody reads the answer
    const requestId = request.headers.get(X_REQUEST_ID) ?? undefined;
    console.error(JSON.stringify({ level: "error", msg: `admission DO call failed: ${String(err)}`, shard: shard.name, requestId }));
    throw new HttpError("overloaded", "admission is unavailable; retry shortly", 1);
  }
}

/** The edge's coarse verdict on a request; metadata and small decodes are tiles. */
export interface Cost {
  partition: Partition;
  estimate: Estimate;
}

/** The edge's verdict on a decode of this estimated cost: "full" from the operator's thresholds. */
export const coarseCost = (estimate: Estimate, config: EdgeConfig): Cost => ({
  partition: classify(estimate, thresholdsOf(config.admission)),
  estimate,
});

const METADATA: Cost = { partition: "tile", estimate: { bytes: 0, work: 0 } };

/**
 * Sends a decoder request about `sourceId` (a source, or a style document's name) through
 * admission: to the nearest region that serves it, and on to the next while a region answers
 * that it has no live decoder. Each call says what is left of the client's REQUEST_TIMEOUT,
 * so the admissions of one request (its metadata, then its image; a region after another)
 * share one deadline. Non-OK answers are thrown as HttpError. With a `body` (a POST route's
 * canonical body, whose digest the path names), the call is a POST carrying it. With `tier`,
 * the DO may answer from its upper tier and keep the decoder's answer there (admission/upper-tier.ts).
 */
export async function viaAdmission(
  env: Env,
  sourceId: string,
  decoderPath: string,
  client: ForClient,
  cost: Cost = METADATA,
  body?: string,
  tier?: TierEntry,
): Promise<Response> {
  const { requestTimeoutMs } = edgeConfig(env).admission;
  const ask = (shard: Shard) =>
    callShard(
      env,
      shard,
      new Request(`https://admission${decoderPath}`, {
        ...(body !== undefined && { method: "POST", body }),
        signal: client.signal,
        headers: {
          [PARTITION_HEADER]: cost.partition,
          [ESTIMATE_HEADER]: String(cost.estimate.bytes),
          [ESTIMATE_WORK_HEADER]: String(Math.ceil(cost.estimate.work)),
          [X_REQUEST_ID]: client.requestId,
          [TIME_LEFT_HEADER]: String(Math.max(0, client.arrivedAt + requestTimeoutMs - Date.now())),
          ...(tier && { [TIER_KEY_HEADER]: tier.key, [TIER_SOURCE_HEADER]: tier.source }),
        },
      }),
    );
  const [nearest, ...others] = sourceShards(edgeConfig(env).placement, sourceId);
  let res = await ask(nearest);
  for (const next of others) {
    if (!res.headers.has(NO_DECODERS_HEADER)) break;
    await res.body?.cancel(); // only the last region's "no decoder" is the client's answer
    res = await ask(next);
  }
  if (!res.ok) throw await errorFromResponse(res);
  return res;
}
