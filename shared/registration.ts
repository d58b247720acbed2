// Decoder registration: each decoder POSTs a heartbeat (where to reach it, how many decodes it
// runs well at once, its memory limit) to the edge every few seconds; the admission DO routes
// to the live ones and, when NTHREADS / MEMORY_LIMIT are 0, sizes itself from their sums. A
// decoder that is shutting down sends one last heartbeat with `leaving: true`: the DO stops
// routing to it at once instead of waiting for DECODER_TTL.
// The request is signed like every edge↔decoder request; the signed query carries the body's
// SHA-256, so a captured signature cannot carry a different body.

import { badRequest } from "./errors";

export const HEARTBEAT_PATH = "/__decoders/heartbeat";

/**
 * The URL of a decoder run as a Cloudflare Container: no address the DO could fetch, but the name
 * of the container's Durable Object, which reaches it. Only that DO registers such a decoder; a
 * heartbeat over HTTP naming one is refused.
 */
export const CONTAINER_URL_PREFIX = "container://";
const CONTAINER_URL = /^container:\/\/[a-z0-9-]{1,63}$/;

export interface Heartbeat {
  /** Base URL the DO forwards to. */
  url: string;
  /** Decodes the decoder runs well at once. */
  capacity: number;
  /** Its memory limit: cgroup v2, else cgroup v1, else total memory (or an operator override). */
  memoryBytes: number;
  /** The region it serves (TESSERA_REGION); absent: the edge's DEFAULT_REGION. */
  region?: string;
  /** Its last heartbeat: it is draining and takes no new work. */
  leaving?: true;
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The path and query a heartbeat with this body is signed over. */
export const heartbeatTarget = async (body: string) => `${HEARTBEAT_PATH}?digest=${await sha256Hex(body)}`;

/** Validates a heartbeat body; 400 naming the bad field. `containers`: a container's URL is allowed. */
export function parseHeartbeat(body: string, { containers = false } = {}): Heartbeat {
  let value: Partial<Heartbeat>;
  try {
    value = JSON.parse(body);
  } catch {
    throw badRequest("heartbeat body is not JSON");
  }
  const { url, capacity, memoryBytes, region, leaving } = value;
  const container = containers && typeof url === "string" && CONTAINER_URL.test(url);
  if (!container && (typeof url !== "string" || !/^https?:\/\/[^/?#]+/.test(url))) {
    throw badRequest("heartbeat url must be an http(s) URL");
  }
  if (!Number.isInteger(capacity) || capacity! < 1) throw badRequest("heartbeat capacity must be a whole number ≥ 1");
  if (!Number.isInteger(memoryBytes) || memoryBytes! < 1) {
    throw badRequest("heartbeat memoryBytes must be a whole number ≥ 1");
  }
  if (region !== undefined && (typeof region !== "string" || !region)) throw badRequest("heartbeat region must be a region's name");
  if (leaving !== undefined && typeof leaving !== "boolean") throw badRequest("heartbeat leaving must be true or false");
  return {
    url: url.replace(/\/$/, ""),
    capacity: capacity!,
    memoryBytes: memoryBytes!,
    ...(region !== undefined && { region }),
    ...(leaving && { leaving: true }),
  };
}
