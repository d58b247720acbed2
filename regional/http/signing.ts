// Every request under /v1 is the edge's: it carries the edge's HMAC signature over its method,
// path, query and limits, and is taken once (accepted-ids.ts). The limits are what the admission
// DO granted (the peak memory and the work, the partition they count in, what is left of its
// deadline) and the call's own id; they replace this decoder's own defaults instead of stacking
// on them.

import { createHmac } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Partition } from "../../shared/cost";
import { badRequest, HttpError } from "../../shared/errors";
import {
  GRANT_HEADER,
  GRANT_WORK_HEADER,
  GRANTED_PARTITION_HEADER,
  limitsFrom,
  SIGNATURE_HEADER,
  TIMEOUT_HEADER,
  verifyRequest,
  type SignedLimits,
} from "../../shared/protocol";
import { MAX_DEADLINE_MS } from "../../shared/protocol";
import type { AcceptedIds } from "./accepted-ids";

/** Paths that must carry the signature, checked before the route is looked up. */
export const SIGNED_PREFIX = "/v1/";

/** What the admission DO granted a request: its peak memory, its work, and the partition it counts in. */
export interface Grant {
  bytes: number;
  /** Work units; a DO that signs none (an older edge) sets no work limit of its own. */
  work: number;
  partition?: Partition;
}

/**
 * A 4xx about the edge's signed headers, not the client's request: its answer says so
 * (SIGNED_HEADERS_REFUSED_HEADER), for the DO to answer it as the service's fault.
 */
export class SignedHeadersRefused extends HttpError {
  constructor(refusal: HttpError) {
    super(refusal.kind, refusal.message, refusal.retryAfterSeconds, refusal.detail);
    this.name = "SignedHeadersRefused";
  }
}

/** Marks a refusal of the signed headers as such; a 503 (the accepted ids full) stays transient. */
const aboutSignedHeaders = (err: unknown) => (err instanceof HttpError && err.status < 500 ? new SignedHeadersRefused(err) : err);

/** The request's signed limits, once its signature is verified and its id taken (401 otherwise: a replay among them). */
export async function verifiedLimits(req: IncomingMessage, secret: string, ids: AcceptedIds): Promise<SignedLimits> {
  const limits = limitsFrom((name) => headerValue(req.headers[name]));
  const signature = headerValue(req.headers[SIGNATURE_HEADER]);
  const now = Date.now();
  try {
    const expires = await verifyRequest(secret, req.method ?? "GET", req.url ?? "", signature, now, nodeHmac, limits);
    ids.take(limits.requestId, expires, now);
  } catch (err) {
    throw aboutSignedHeaders(err);
  }
  return limits;
}

/** The DO's grant, when the request carries one. */
export function grantOf(limits: SignedLimits): Grant | undefined {
  const bytes = wholeNumber(limits.grantBytes, GRANT_HEADER, 0, Number.MAX_SAFE_INTEGER);
  if (bytes === undefined) return undefined;
  const work = wholeNumber(limits.grantWork, GRANT_WORK_HEADER, 0, Number.MAX_SAFE_INTEGER) ?? Infinity;
  const partition = limits.partition ?? undefined;
  if (partition !== undefined && partition !== "tile" && partition !== "full") {
    throw new SignedHeadersRefused(badRequest(`${GRANTED_PARTITION_HEADER} must be tile or full`));
  }
  return { bytes, work, partition };
}

/** The request's deadline in ms: what is left of the DO's, else this decoder's default. */
export function deadlineOf(limits: SignedLimits, defaultMs: number): number {
  return wholeNumber(limits.timeoutMs, TIMEOUT_HEADER, 1, MAX_DEADLINE_MS) ?? defaultMs;
}

export function headerValue(h: string | string[] | undefined): string | null {
  if (Array.isArray(h)) return h[0] ?? null;
  return h ?? null;
}

/** The edge's signature, computed with node:crypto: synchronous, no WebCrypto job per request. */
const nodeHmac = (secret: string, message: string) => createHmac("sha256", secret).update(message).digest("hex");

/** A signed limit header's value, within bounds; undefined when absent. */
function wholeNumber(raw: string | null | undefined, header: string, min: number, max: number): number | undefined {
  if (raw === null || raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) throw new SignedHeadersRefused(badRequest(`${header} must be a whole number from ${min} to ${max}`));
  return n;
}
