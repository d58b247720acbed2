// One error table for the edge and the decoder: each kind of failure has one HTTP status.
// Everything thrown on purpose is an HttpError; anything else becomes a 502 at the edge
// or a 500-free 502 at the decoder, never a stack trace on the wire. An error's message is
// the client's to read (the edge may cache it for anyone); what only an operator may read (a
// source's label, a bucket and key, a library's own text) is its detail, which the decoder
// logs with the request id and no answer carries.

export type ErrorKind =
  | "bad_request" // 400: malformed request, message names the bad part
  | "unauthorized" // 401: a decoder request without a valid edge signature, an operator's route without its token
  | "not_found" // 404: unknown source
  | "version_gone" // 404: a known source's requested version no longer exists
  | "deadline" // 408: deadline exceeded
  | "too_large" // 413: can never fit the budget
  | "unsupported" // 501: valid but not implemented
  | "bad_gateway" // 502: decoder or store failure
  | "overloaded" // 503 + Retry-After
  | "gateway_timeout"; // 504: store did not answer in time

const STATUS: Record<ErrorKind, number> = {
  bad_request: 400,
  unauthorized: 401,
  not_found: 404,
  version_gone: 404,
  deadline: 408,
  too_large: 413,
  unsupported: 501,
  bad_gateway: 502,
  overloaded: 503,
  gateway_timeout: 504,
};

export class HttpError extends Error {
  readonly status: number;
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly retryAfterSeconds?: number,
    /** For the decoder's log alone: the internal names and text the message leaves out. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = "HttpError";
    this.status = STATUS[kind];
  }
}

export const badRequest = (message: string, detail?: string) => new HttpError("bad_request", message, undefined, detail);
export const notFound = (message: string, detail?: string) => new HttpError("not_found", message, undefined, detail);
export const versionGone = (message: string) => new HttpError("version_gone", message);
export const unsupported = (message: string, detail?: string) => new HttpError("unsupported", message, undefined, detail);
export const badGateway = (message: string, detail?: string) => new HttpError("bad_gateway", message, undefined, detail);

/** Kind for a status received from another tier (the decoder's answer seen by the edge). */
export function kindOfStatus(status: number): ErrorKind {
  const found = (Object.keys(STATUS) as ErrorKind[]).find((k) => STATUS[k] === status);
  return found ?? "bad_gateway";
}

/** The JSON body every error answer carries. */
export interface ErrorBody {
  error: ErrorKind;
  message: string;
  /** The request's id (shared/request-id.ts), to find its log lines by. */
  requestId?: string;
}

export function errorResponse(err: unknown, headers: ConstructorParameters<typeof Headers>[0] = {}, requestId?: string): Response {
  const e = err instanceof HttpError ? err : new HttpError("bad_gateway", "internal failure");
  const h = new Headers(headers);
  h.set("content-type", "application/json; charset=utf-8");
  if (e.retryAfterSeconds !== undefined) h.set("retry-after", String(e.retryAfterSeconds));
  const body: ErrorBody = { error: e.kind, message: e.message, ...(requestId !== undefined && { requestId }) };
  return new Response(JSON.stringify(body), { status: e.status, headers: h });
}

/** Rebuilds the HttpError a non-OK answer from another tier carries (decoder → DO → edge). */
export async function errorFromResponse(res: Response): Promise<HttpError> {
  let message = `upstream answered ${res.status}`;
  let kind = kindOfStatus(res.status);
  try {
    const body = (await res.json()) as Partial<ErrorBody>;
    if (typeof body.message === "string") message = body.message;
    // The body's kind, when it is one of ours for this status (two kinds share 404).
    if (typeof body.error === "string" && Object.hasOwn(STATUS, body.error) && STATUS[body.error] === res.status) {
      kind = body.error;
    }
  } catch {
    // not our JSON error body: keep the generic message
  }
  const retry = res.headers.get("retry-after");
  return new HttpError(kind, message, retry ? Number(retry) : undefined);
}
