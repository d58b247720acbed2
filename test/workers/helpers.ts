// Shared by the workerd tests: requests through the real Worker, its metrics, and decoder
// registration through the real heartbeat route (the tests speak for the frozen decoder,
// which cannot heartbeat while SIGSTOPped).
import { env, exports } from "cloudflare:workers";
import { signRequest, SIGNATURE_HEADER, type SourceInfo } from "../../shared/protocol";
import { heartbeatTarget, type Heartbeat } from "../../shared/registration";

export const BASE = "http://tessera.test";
export const get = (path: string, init?: RequestInit) => exports.default.fetch(new Request(BASE + path, init));

export async function metric(name: string): Promise<number> {
  const text = await (await get("/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`tessera_admission_${name} `));
  return Number(line?.split(" ")[1]);
}

/**
 * Waits until no lease is held. A request the frozen decoder took keeps its admission after its
 * client got 408 (the decoder's work has not stopped) until the lease's alarm ends it,
 * LEASE_GRACE (1 s in these tests) after the deadline: tests start from no permit in use.
 */
export async function settled(timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await metric("permits_in_use")) > 0) {
    if (Date.now() > until) throw new Error(`permits still in use after ${timeoutMs} ms`);
    await scheduler.wait(100);
  }
}

export async function heartbeat(report: Partial<Heartbeat> = {}, secret = env.DECODER_SECRET): Promise<Response> {
  const body = JSON.stringify({ url: env.TEST_DECODER_URL, capacity: 16, memoryBytes: 80 * 1000 * 1000, ...report });
  const target = await heartbeatTarget(body);
  return get(target, { method: "POST", body, headers: { [SIGNATURE_HEADER]: await signRequest(secret, "POST", target) } });
}

/** Metadata of a square RGB source with 256 px tiles and these level sizes, full size first. */
export function squareSource(id: string, sizes: number[]): SourceInfo {
  return {
    id,
    version: "v1",
    width: sizes[0],
    height: sizes[0],
    tileWidth: 256,
    tileHeight: 256,
    levels: sizes.map((size) => ({ width: size, height: size })),
    bytes: 1234,
  };
}
