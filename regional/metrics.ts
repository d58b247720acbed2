// The decoder's own Prometheus metrics (GET /metrics, unauthenticated like /health).
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: "tessera_decoder_" });

export const requestsTotal = new Counter({
  name: "tessera_decoder_requests_total",
  help: "Decoder requests answered, by route and status (aborted: the client went away).",
  labelNames: ["route", "status"] as const,
  registers: [registry],
});

export const requestSeconds = new Histogram({
  name: "tessera_decoder_request_seconds",
  help: "Time from request to answer, by route.",
  labelNames: ["route"] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

/** The metric label for a request path: a fixed, small set. */
export function routeOf(pathname: string): string {
  const first = pathname.split("/")[pathname.startsWith("/v1/") ? 2 : 1];
  return ["info", "image", "tiles", "health", "metrics"].includes(first) ? first : "other";
}
