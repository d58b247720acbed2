// The decoder's routes as a typed table: a route's path names its parameters, and its handler
// receives exactly those, by name. A parameter is one whole path segment, percent-decoded (400
// when that fails); literal segments match as sent. A plain scan finds the route: at nine routes
// it costs nothing a decode would notice.

import { badRequest } from "../../shared/errors";
import type { DecoderContext, Limiter } from "../decoder";
import type { Answer } from "./answer";
import type { Grant } from "./signing";

type Method = "GET" | "POST";

/** The parameter names of a path pattern: "/v1/info/:id" → "id". */
type ParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | ParamNames<Rest>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;

export type Params<P extends string> = { readonly [K in ParamNames<P>]: string };

/** What a handler is given of its request. */
export interface RouteRequest<P> {
  params: P;
  /** The snapshot the edge pinned the request to (`?version=`), if it names one. */
  version: string | undefined;
  /** The rest of the query. */
  query: URLSearchParams;
  /** Aborts at the request's deadline, when its client goes away or when the DO cancels it. */
  signal: AbortSignal;
  /** Aborts only when the client goes away: what a stream that outlives the deadline ends with. */
  client: AbortSignal;
  /** The admission DO's grant, when the request carries one (the limited routes only). */
  grant: Grant | undefined;
  /** A POST route's body, once its SHA-256 is the digest its signed path names (request-body.ts). */
  body: string | undefined;
  /** The Authorization header: the operator's token, on /metrics. */
  authorization: string | undefined;
  requestId: string;
}

export type Handler<P> = (request: RouteRequest<P>, decoder: DecoderContext) => Answer | Promise<Answer>;

export interface RouteOptions {
  /**
   * The limiter whose permit the request holds until its answer's last byte is written, under a
   * deadline and cancellable by the DO. Without one, a control route answered at once.
   */
  limiter?: Limiter;
  /** Answered while the decoder drains; every other request is then refused before any work. */
  whileDraining?: boolean;
  /** A POST route's body limit in bytes: its body is read within it and the request's deadline. */
  bodyBytes?: number;
}

export interface Route extends RouteOptions {
  method: Method;
  path: string;
  handler: Handler<Record<string, string>>;
  segments: readonly string[];
}

export function route<P extends string>(method: Method, path: P, handler: Handler<Params<P>>, options: RouteOptions = {}): Route {
  // Sound: a matched request has exactly the parameters its path names.
  return { method, path, handler: handler as Handler<Record<string, string>>, segments: path.split("/"), ...options };
}

/** The route whose path `pathname` has, if any (the method is checked by `paramsOf`). */
export function findRoute(routes: readonly Route[], method: string, pathname: string): Route | undefined {
  const segments = pathname.split("/");
  const matching = routes.filter((r) => matches(r.segments, segments));
  return matching.find((r) => r.method === method) ?? matching[0];
}

/** The request's parameters by name; 400 for another method than the route's, or bad percent-encoding. */
export function paramsOf(route: Route, method: string | undefined, pathname: string): Record<string, string> {
  if (method !== route.method) throw badRequest(`method ${method} is not allowed; use ${route.method}`);
  const segments = pathname.split("/");
  const params: Record<string, string> = {};
  route.segments.forEach((s, i) => {
    if (s.startsWith(":")) params[s.slice(1)] = decodeSegment(segments[i]);
  });
  return params;
}

function matches(pattern: readonly string[], segments: readonly string[]): boolean {
  return pattern.length === segments.length && pattern.every((s, i) => s.startsWith(":") || s === segments[i]);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`path segment "${segment}" is not valid percent-encoding`);
  }
}
