// The decoder's own Prometheus metrics, process-wide (GET /metrics).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { renderPoolStats } from "../render/render-pool";

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: "tessera_decoder_" });

// prom-client's event-loop lag gauges read a record of delays that each scrape clears: one
// scraper (a curl, a second Prometheus) hid a stall from every other. They give way to a
// histogram, which like any Prometheus histogram only grows, so every scraper sees every stall.
for (const { name } of registry.getMetricsAsArray()) {
  if (name.startsWith("tessera_decoder_nodejs_eventloop_lag")) registry.removeSingleMetric(name);
}

/** How often the loop's delay is sampled (prom-client's own resolution). */
const LOOP_SAMPLE_MS = 10;

const loopDelay = new Histogram({
  name: "tessera_decoder_eventloop_delay_seconds",
  help: `How late a timer due every ${LOOP_SAMPLE_MS} ms ran: what every request, heartbeat and deadline waited before its turn. A stall is one sample of its length.`,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** Samples the event loop's delay for as long as the process runs (its timer never holds the process open). */
function sampleLoopDelay(): void {
  let due = performance.now() + LOOP_SAMPLE_MS;
  const timer = setInterval(() => {
    const now = performance.now();
    loopDelay.observe(Math.max(0, now - due) / 1000);
    due = now + LOOP_SAMPLE_MS;
  }, LOOP_SAMPLE_MS);
  timer.unref();
}
sampleLoopDelay();

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

// The render pool (render/render-pool.ts): large renders off the event loop, whose delay
// tessera_decoder_eventloop_delay_seconds above reports.
const poolGauge = (name: string, help: string, read: (s: ReturnType<typeof renderPoolStats>) => number) =>
  new Gauge({ name, help, registers: [registry], collect() { this.set(read(renderPoolStats())); } });
poolGauge("tessera_decoder_render_pool_threads", "Render-pool threads started now.", (s) => s.threads);
poolGauge("tessera_decoder_render_pool_busy", "Large renders running on the render pool now.", (s) => s.busy);
poolGauge("tessera_decoder_render_pool_queued", "Large renders admitted and waiting for a render-pool thread.", (s) => s.queued);
const poolCounter = (name: string, help: string, read: (s: ReturnType<typeof renderPoolStats>) => number) =>
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read(renderPoolStats()));
    },
  });
poolCounter("tessera_decoder_render_pool_renders_total", "Large renders run on the render pool's threads, off the event loop.", (s) => s.renders);
poolCounter("tessera_decoder_render_pool_recycles_total", "Times the idle render pool was replaced by a fresh one, to return what a large render grew.", (s) => s.recycles);

/** The metric label for a request path: a fixed, small set. */
export function routeOf(pathname: string): string {
  const first = pathname.split("/")[pathname.startsWith("/v1/") ? 2 : 1];
  return ["info", "image", "tiles", "point", "areas", "statistics", "health", "metrics"].includes(first) ? first : "other";
}
