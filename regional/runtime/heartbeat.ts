// Registration: the decoder tells the edge (and through it the admission DO) where it is, how
// many decodes it runs well at once and how much memory it has, every few seconds. A decoder
// that stops heartbeating leaves the DO's routing and its auto-sized permits and memory after
// DECODER_TTL; one that drains says so in a last heartbeat, and leaves them at once.
//
//   TESSERA_EDGE_URL              the Worker's base URL; unset = do not register
//   TESSERA_DECODER_PUBLIC_URL    where the DO reaches this decoder (default: the listen URL)
//   TESSERA_HEARTBEAT_INTERVAL    seconds between heartbeats (5; keep well under DECODER_TTL)
//   TESSERA_DECODER_MEMORY_LIMIT  bytes reported; 0 = cgroup v2, else cgroup v1, else total RAM
//   TESSERA_REGION                the edge region (one of its REGIONS) this decoder serves; unset = its default

import { readFile } from "node:fs/promises";
import { totalmem } from "node:os";
import { badConfig, intVar, urlVar } from "../../shared/config";
import { signRequest, SIGNATURE_HEADER } from "../../shared/protocol";
import { REGION_NAME } from "../../shared/regions";
import { heartbeatTarget, type Heartbeat } from "../../shared/registration";
import type { LogRecord } from "./log";

export interface HeartbeatConfig {
  edgeUrl?: string;
  publicUrl?: string;
  intervalMs: number;
  memoryLimit: number;
  region?: string;
}

export function readHeartbeatConfig(env: NodeJS.ProcessEnv = process.env): HeartbeatConfig {
  return {
    // A typo in either URL would only show as failed heartbeats: a decoder running, never sent work.
    edgeUrl: urlVar(env, "TESSERA_EDGE_URL")?.replace(/\/$/, ""),
    publicUrl: urlVar(env, "TESSERA_DECODER_PUBLIC_URL")?.replace(/\/$/, ""),
    // Past an hour a decoder would fall out of every DO between beats (DECODER_TTL is seconds).
    intervalMs: intVar(env, "TESSERA_HEARTBEAT_INTERVAL", { min: 1, max: 3600, fallback: 5 }) * 1000,
    memoryLimit: intVar(env, "TESSERA_DECODER_MEMORY_LIMIT", { fallback: 0 }),
    region: region(env.TESSERA_REGION),
  };
}

/** A region name as REGIONS spells them; whether the edge knows it, its answer to the heartbeat says. */
function region(raw: string | undefined): string | undefined {
  const text = (raw ?? "").trim();
  if (!text) return undefined;
  if (!REGION_NAME.test(text)) throw badConfig("TESSERA_REGION", `must be a region name of a-z, 0-9 and "-", got ${JSON.stringify(raw)}`);
  return text;
}

/** cgroup v1 reports "no limit" as a huge page-rounded number rather than "max". */
const V1_UNLIMITED = 2 ** 60;

/** The memory this process may use: cgroup v2 memory.max, else cgroup v1's limit, else total RAM. */
export async function detectMemoryLimit(cgroupRoot = "/sys/fs/cgroup"): Promise<number> {
  const read = (path: string) => readFile(`${cgroupRoot}/${path}`, "utf8").then((t) => t.trim(), () => undefined);
  const v2 = await read("memory.max");
  if (v2 !== undefined && /^\d+$/.test(v2)) return Number(v2);
  if (v2 === undefined) {
    const v1 = await read("memory/memory.limit_in_bytes");
    if (v1 !== undefined && /^\d+$/.test(v1) && Number(v1) < V1_UNLIMITED) return Number(v1);
  }
  return totalmem();
}

/** The most a leaving heartbeat may hold up the drain: the edge may be gone already. */
const LEAVING_TIMEOUT_MS = 2000;

export interface Heartbeats {
  /** Stops the beats and sends one last one saying this decoder is leaving; resolves when it is answered or has failed. */
  leave(): Promise<void>;
}

/** Sends a heartbeat now and every `intervalMs` until it leaves. Failures are logged, not fatal. */
export function startHeartbeat(opts: {
  edgeUrl: string;
  secret: string;
  report: Heartbeat;
  intervalMs: number;
  log: (r: LogRecord) => void;
}): Heartbeats {
  let failing = false;
  const send = async (report: Heartbeat, timeoutMs: number) => {
    const body = JSON.stringify(report);
    const target = await heartbeatTarget(body);
    try {
      const res = await fetch(opts.edgeUrl + target, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", [SIGNATURE_HEADER]: await signRequest(opts.secret, "POST", target) },
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) throw new Error(`edge answered ${res.status}: ${await res.text()}`);
      if (failing) opts.log({ level: "info", msg: "heartbeat accepted again", edge: opts.edgeUrl });
      failing = false;
    } catch (err) {
      // One line per outage, not one per beat.
      if (!failing) opts.log({ level: "error", msg: "heartbeat failed", edge: opts.edgeUrl, error: String(err) });
      failing = true;
    }
  };
  let last = send(opts.report, opts.intervalMs);
  const timer = setInterval(() => (last = send(opts.report, opts.intervalMs)), opts.intervalMs);
  timer.unref();
  return {
    async leave() {
      clearInterval(timer);
      // After the beat in progress, so the edge cannot see this decoder alive again after it left.
      await last;
      failing = false; // the last word is always logged when it fails
      await send({ ...opts.report, leaving: true }, LEAVING_TIMEOUT_MS);
    },
  };
}
