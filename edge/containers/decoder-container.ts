// A regional decoder run as a Cloudflare Container beside this Durable Object (one object, one
// container: decoder-0 … decoder-{N-1}). The object keeps its container running and registers its
// decoder like any other: every DECODER_TTL/3 its alarm starts the container if it is not
// running, asks the decoder's /health, and hands the admission shards of its region a heartbeat
// naming container://{name} with the capacity and memory of the instance type; a decoder that
// stops answering is reported leaving. The admission DOs reach it through this object
// (admission/decoder-link.ts), which relays each request to the container's port. Until its
// decoder has answered /health, a request is answered as a draining decoder answers (nothing was
// done), so the admission DO sends it to another decoder or answers 503 + Retry-After.
import { DurableObject } from "cloudflare:workers";
import { errorResponse, HttpError } from "../../shared/errors";
import { DRAINING_HEADER } from "../../shared/protocol";
import { CONTAINER_URL_PREFIX, type Heartbeat } from "../../shared/registration";
import { deliverHeartbeat } from "../admission/heartbeat-route";
import { edgeConfig, type Env } from "../env";
import { containerRuntime, type ContainerRuntime } from "./runtime";
import { containerEnv, containerName, type ContainerSettings } from "./settings";
import { CONTAINER_WAKE_PATH } from "./wake";

/** How long the decoder's /health may take before it counts as not answering. */
const HEALTH_TIMEOUT_MS = 2000;

export class DecoderContainer extends DurableObject<Env> {
  private readonly name: string;
  private readonly runtime: ContainerRuntime;
  /** The decoder answered /health at the last beat: requests go to it. */
  private ready = false;
  /** The beat under way, shared by every caller that asks for one meanwhile. */
  private beating?: Promise<void>;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.name = ctx.id.name ?? "decoder";
    const standIn = env.TEST_CONTAINER_STAND_IN && `${env.TEST_CONTAINER_STAND_IN}/containers/${this.name}`;
    this.runtime = containerRuntime(ctx.container, standIn);
  }

  async fetch(request: Request): Promise<Response> {
    const { pathname, search } = new URL(request.url);
    try {
      if (pathname === CONTAINER_WAKE_PATH) {
        await this.beat();
        return new Response(null, { status: 204 });
      }
      // A container that exited since the last beat has not been sent this request: it may go elsewhere.
      if (!this.ready || !(await this.runtime.running())) {
        this.ctx.waitUntil(this.beat());
        return notReady(this.name);
      }
      return await this.runtime.fetch(new Request(`http://${this.name}${pathname}${search}`, request));
    } catch (err) {
      return errorResponse(err instanceof HttpError ? err : new HttpError("bad_gateway", `container ${this.name}: ${String(err)}`));
    }
  }

  async alarm(): Promise<void> {
    await this.beat();
  }

  /**
   * One beat at a time. The next is scheduled whatever this one found, unless this container is
   * no longer one of the deployment's (DECODER_CONTAINER_COUNT lowered): then it is retired.
   */
  private beat(): Promise<void> {
    this.beating ??= (async () => {
      try {
        const settings = edgeConfig(this.env).containers;
        if (!settings || !isOneOf(this.name, settings)) return await this.retire();
        await this.beatOnce(settings).finally(() => this.ctx.storage.setAlarm(Date.now() + edgeConfig(this.env).admission.decoderTtlMs / 3));
      } finally {
        this.beating = undefined;
      }
    })();
    return this.beating;
  }

  private async beatOnce(settings: ContainerSettings): Promise<void> {
    if (!(await this.runtime.running())) {
      this.ready = false;
      await this.runtime.start(containerEnv(this.env, edgeConfig(this.env).decoderSecret, settings));
    }
    const wasReady = this.ready;
    this.ready = await this.healthy();
    // A decoder that stopped answering leaves routing at once rather than after DECODER_TTL.
    if (this.ready || wasReady) await deliverHeartbeat(this.env, heartbeat(this.name, settings, !this.ready));
  }

  /** Out of the deployment: its decoder leaves routing, its container stops, and no alarm comes back. */
  private async retire(): Promise<void> {
    const settings = edgeConfig(this.env).containers;
    if (this.ready && settings) await deliverHeartbeat(this.env, heartbeat(this.name, settings, true)).catch(() => {});
    this.ready = false;
    if (await this.runtime.running()) await this.runtime.stop();
    await this.ctx.storage.deleteAlarm();
  }

  private async healthy(): Promise<boolean> {
    try {
      const res = await this.runtime.fetch(new Request(`http://${this.name}/health`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) }));
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false; // not listening yet, or gone
    }
  }
}

/** Whether `name` is one of the deployment's containers, decoder-0 … decoder-{count-1}. */
const isOneOf = (name: string, { count }: ContainerSettings) => Array.from({ length: count }, (_, i) => containerName(i)).includes(name);

function heartbeat(name: string, { capacity, memoryBytes, region }: ContainerSettings, leaving: boolean): Heartbeat {
  return { url: `${CONTAINER_URL_PREFIX}${name}`, capacity, memoryBytes, ...(region && { region }), ...(leaving && { leaving: true }) };
}

/** What a draining decoder answers: nothing was done, and the admission DO may send the request elsewhere. */
function notReady(name: string): Response {
  const res = errorResponse(new HttpError("overloaded", `container ${name} is starting`, 1));
  res.headers.set(DRAINING_HEADER, "1");
  return res;
}
