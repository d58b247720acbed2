// The admission Durable Object: one per decoder region. It admits each decode through the
// two-partition admission model (model.ts) under a lease its alarm enforces (leases.ts),
// forwards it to the least loaded live decoder (decoder-calls.ts), and gives the answer back,
// whole when small, else streamed as it comes (answers.ts); what it holds is released when the
// decoder's work and the answer's last byte are done, on every path: success, decoder error,
// client abort, deadline. Identical decodes at once are admitted and decoded once, their answer
// given to all (coalesce.ts). It also takes the edge's own calls: the metrics page,
// decoder heartbeats, invalidations (invalidate.ts) and /file transfers (transfer.ts). Before
// admitting a decode the edge may share, it looks the answer up in its own location's cache,
// and keeps what the decoder answers there (upper-tier.ts).
// A region with ADMISSION_SHARDS shards has that many of these DOs, each admitting within its
// fixed share of the region's permits and memory, and of each decoder's full memory
// (shared/regions.ts, shardShare).

import { DurableObject } from "cloudflare:workers";
import { fullMemory, thresholdsOf } from "../../shared/admission-config";
import { classify, ESTIMATE_HEADER, GrantExceeded, PARTITION_HEADER, type Partition } from "../../shared/cost";
import { errorResponse, HttpError } from "../../shared/errors";
import { DECODER_FILE_PREFIX, decoderLabel, isDecodePath } from "../../shared/protocol";
import { shardFromName, shardShare } from "../../shared/regions";
import { parseHeartbeat } from "../../shared/registration";
import { isValidRequestId, X_REQUEST_ID } from "../../shared/request-id";
import { edgeConfig, type EdgeConfig, type Env } from "../env";
import { answerResponse, type DecodedAnswer } from "./answers";
import { Flights } from "./coalesce";
import { DecoderCalls } from "./decoder-calls";
import { decoderFetch } from "./decoder-link";
import { DecoderRegistry } from "./decoders";
import { failing } from "./faults";
import { invalidate } from "./invalidate";
import { deadlineFrom, Leases, TIME_LEFT_HEADER, type Lease } from "./leases";
import { admissionMetrics, type DoStats } from "./metrics";
import { NO_DECODERS_HEADER } from "./placement";
import { AdmissionModel } from "./model";
import { FileTransfers } from "./transfer";
import { tierEntryOf, UpperTier, type TierEntry } from "./upper-tier";
import { wakeContainers } from "../containers/wake";
import { imageCacheControl } from "../http-cache";

/** DO-internal paths the edge uses for the metrics page and decoder heartbeats. */
export const METRICS_PATH = "/__admission/metrics";
export const HEARTBEAT_DO_PATH = "/__admission/heartbeat";
/** The edge's admin route hands a source's invalidation here: `${INVALIDATE_DO_PATH}{id}`. */
export const INVALIDATE_DO_PATH = "/__admission/invalidate/";
/** How often an admission DO without live decoders may wake the decoder containers. */
const WAKE_INTERVAL_MS = 5000;

export class AdmissionDO extends DurableObject<Env> {
  readonly config: EdgeConfig;
  readonly model: AdmissionModel;
  readonly decoders: DecoderRegistry;
  readonly stats: DoStats = { released: 0, leasesExpired: 0, requestTimeouts: 0, disagreements: 0, decoderRetries: 0, drainingResends: 0 };
  /** Decodes in flight by decoder path, each answering every identical request that arrives meanwhile. */
  readonly flights = new Flights();
  /** Each listed decoder's name on /metrics (shared/protocol.ts decoderLabel), by its URL. */
  readonly decoderLabels = new Map<string, string>();
  private readonly leases: Leases;
  private readonly calls: DecoderCalls;
  private readonly transfers: FileTransfers;
  /** Decoded answers kept in this DO's location, for every edge location's misses. */
  readonly tier: UpperTier;
  /** This DO's shard of its region ("region/shard" names it; "default" is shard 0 of 1). */
  private readonly shard: number;
  /** When this DO last woke the decoder containers (epoch ms). */
  private wokenAt = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.config = edgeConfig(env);
    // The name the edge asked for by idFromName, readable inside the object (Cloudflare since March 2026).
    this.shard = shardFromName(ctx.id.name);
    const a = this.config.admission;
    if (a.unrecognizedMode !== undefined) {
      console.log(
        JSON.stringify({
          level: "warn",
          msg: `ADMISSION_MODE "${a.unrecognizedMode}" is not advanced or basic; running in basic mode`,
        }),
      );
    }
    const { shards } = this.config.placement;
    const share = (memoryBytes: number) => shardShare(fullMemory(memoryBytes, a.tilesMemoryRatio), this.shard, shards);
    this.decoders = new DecoderRegistry(a.decoderTtlMs, share);
    this.model = new AdmissionModel({ ...a, shards }, this.decoders);
    const resize = () => this.resize();
    const waitUntil = (promise: Promise<unknown>) => this.ctx.waitUntil(promise);
    const setAlarm = (at: number) => this.ctx.storage.setAlarm(at);
    this.leases = new Leases({ admission: a, model: this.model, stats: this.stats, resize, setAlarm });
    const { decoderSecret, streamAnswerBytes } = this.config;
    const fetchDecoder = decoderFetch(env.DECODER_CONTAINER);
    this.calls = new DecoderCalls({ decoderSecret, fetchDecoder, admission: a, decoders: this.decoders, streamAnswerBytes, stats: this.stats, resize, waitUntil });
    this.tier = new UpperTier(ctx.storage, imageCacheControl(this.config));
    this.transfers = new FileTransfers(this.config, this.calls, waitUntil, (at) => this.leases.deadline(at));
    this.resize();
  }

  /** /file transfers streaming now, and those refused at the cap (the metrics page shows them). */
  get fileTransfers(): { inProgress: number; shed: number } {
    return this.transfers;
  }

  async fetch(request: Request): Promise<Response> {
    // Set only by tests, to show that a failing shard fails its own sources and nothing else.
    if (this.env.TEST_THROWING_SHARD && this.env.TEST_THROWING_SHARD === this.ctx.id.name) {
      throw new Error(`TEST_THROWING_SHARD: shard ${this.ctx.id.name} throws`);
    }
    const url = new URL(request.url);
    // The edge's id for the client's request (absent on its own calls: metrics, heartbeats).
    const sent = request.headers.get(X_REQUEST_ID);
    const requestId = isValidRequestId(sent) ? sent : undefined;
    try {
      return await this.route(url, request, requestId);
    } catch (err) {
      // A client that went away is not a DO failure (and reads no answer).
      const res = errorResponse(err instanceof HttpError || request.signal.aborted ? err : failing(err, requestId));
      // Another region that serves the source may have decoders: the edge tries it next.
      if (res.status === 503 && this.decoders.live(Date.now()).length === 0) {
        res.headers.set(NO_DECODERS_HEADER, "1");
        this.wakeContainers();
      }
      return res;
    }
  }

  /** The edge's own calls by their paths; any other path is a decode. */
  private async route(url: URL, request: Request, requestId?: string): Promise<Response> {
    const { pathname } = url;
    if (pathname === METRICS_PATH) return this.metrics();
    if (pathname === HEARTBEAT_DO_PATH) return await this.heartbeat(await request.text());
    if (pathname.startsWith(INVALIDATE_DO_PATH)) {
      const id = decodeURIComponent(pathname.slice(INVALIDATE_DO_PATH.length));
      await this.tier.invalidate(id);
      const host = { decoderSecret: this.config.decoderSecret, fetchDecoder: this.calls.fetchDecoder, decoders: this.decoders, leases: this.leases };
      return await invalidate(host, id, url.searchParams.get("member") ?? undefined, request.signal, requestId);
    }
    const deadlineAt = deadlineFrom(request.headers.get(TIME_LEFT_HEADER), this.config.admission.requestTimeoutMs);
    if (pathname.startsWith(DECODER_FILE_PREFIX)) return await this.transfers.transfer(pathname + url.search, request.signal, deadlineAt, requestId);
    const partition: Partition = request.headers.get(PARTITION_HEADER) === "full" ? "full" : "tile";
    const estimate = Number(request.headers.get(ESTIMATE_HEADER) ?? 0) || 0;
    // A POST route's canonical body (the edge bounded and checked it; its digest is in the path).
    const body = request.method === "POST" ? await request.text() : undefined;
    const tier = this.config.upperTier ? tierEntryOf(request.headers) : undefined;
    return await this.decode(pathname + url.search, partition, estimate, request.signal, deadlineAt, requestId, body, tier);
  }

  private metrics(): Response {
    this.resize();
    return new Response(admissionMetrics(this, Date.now()), {
      headers: { "content-type": "text/plain; version=0.0.4" },
    });
  }

  private async heartbeat(body: string): Promise<Response> {
    // Heartbeats come only from the edge's route, which refuses containers' URLs, and from the containers' own DOs.
    const report = parseHeartbeat(body, { containers: true });
    if (report.leaving) console.log(JSON.stringify({ level: "info", msg: "decoder leaving", decoder: report.url }));
    const now = Date.now();
    this.decoders.heartbeat(report, now);
    this.resize();
    await this.labelDecoders(report.url, now);
    return new Response(null, { status: 204 });
  }

  /** Labels `url` for /metrics once, and forgets the labels of decoders no longer listed there. */
  private async labelDecoders(url: string, now: number): Promise<void> {
    const listed = new Set(this.decoders.memory(now).map((m) => m.url));
    for (const known of this.decoderLabels.keys()) if (!listed.has(known)) this.decoderLabels.delete(known);
    if (listed.has(url) && !this.decoderLabels.has(url)) this.decoderLabels.set(url, await decoderLabel(this.config.decoderSecret, url));
  }

  /**
   * A decode (an image or a tile) joins the identical one in flight, if any, else is admitted
   * and forwarded (coalesce.ts); anything else, and everything with COALESCE=false, is admitted
   * on its own. A follower waits until its own deadline. A POST's path names its body's digest,
   * so the path alone still says which decodes are identical. One the upper tier holds is
   * answered from it, unadmitted; one it may hold is kept there once decoded.
   */
  private async decode(path: string, partition: Partition, estimate: number, client: AbortSignal, deadlineAt: number, requestId?: string, body?: string, tier?: TierEntry): Promise<Response> {
    const found = tier && (await this.tier.lookup(tier));
    if (found && "hit" in found) return found.hit;
    // A coalesced decode carries the id of the request that started it.
    const admit = async (signal: AbortSignal) => {
      const answer = await this.admitAndForward(path, partition, estimate, signal, deadlineAt, requestId, body);
      if (found) await this.tier.store(found.key, answer);
      return answer;
    };
    if (!this.config.coalesce || !isDecodePath(path)) return answerResponse(await admit(client));
    return await this.flights.answer(path, client, admit, () => this.leases.deadline(deadlineAt));
  }

  /**
   * Admits and forwards one decode. When the decoder's precise estimate exceeds what the edge's
   * coarse one was granted, the decoder refuses before reading any pixel and the request is
   * admitted once more, as the model says for the precise figure (it may then wait, be shed or
   * be refused with 413), under the same deadline; a POST's body is kept for that second call.
   */
  private async admitAndForward(path: string, partition: Partition, estimate: number, client: AbortSignal, deadlineAt: number, requestId?: string, body?: string): Promise<DecodedAnswer> {
    try {
      return await this.calls.forward(path, await this.lease(partition, estimate, client, deadlineAt), requestId, body);
    } catch (err) {
      if (!(err instanceof GrantExceeded)) throw err;
      const precise = classify(err.needed, thresholdsOf(this.config.admission));
      if (precise !== partition) this.stats.disagreements++;
      return await this.calls.forward(path, await this.lease(precise, err.needed.bytes, client, deadlineAt), requestId, body);
    }
  }

  /** Admits a request and leases what it was granted until `release` or the alarm at `deadlineAt`. */
  lease(partition: Partition, estimate: number, clientSignal: AbortSignal, deadlineAt?: number): Promise<Lease> {
    return this.leases.lease(partition, estimate, clientSignal, deadlineAt);
  }

  /**
   * With no live decoder, the deployment's decoder containers are started (each heartbeats once
   * its decoder answers): at most once every WAKE_INTERVAL_MS, for a client retrying after a 503.
   */
  private wakeContainers(): void {
    const { containers } = this.config;
    const now = Date.now();
    if (!containers || now - this.wokenAt < WAKE_INTERVAL_MS) return;
    this.wokenAt = now;
    this.ctx.waitUntil(wakeContainers(this.env, containers));
  }

  /** Reclaims the leases past their deadline and grace. */
  async alarm(): Promise<void> {
    await this.leases.alarm();
  }

  /**
   * This shard's share of NTHREADS / MEMORY_LIMIT, or with 0 of the sums the region's live
   * decoders report; and of the largest one's full memory.
   */
  private resize(): void {
    const { nthreads, memoryLimit } = this.config.admission;
    const live = this.decoders.totals(Date.now());
    const share = (total: number) => shardShare(total, this.shard, this.config.placement.shards);
    this.model.resize(share(nthreads || live.capacity), share(memoryLimit || live.memoryBytes), live.largestFullShare);
  }
}
