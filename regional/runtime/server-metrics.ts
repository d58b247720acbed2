// Gauges and counters of one decoder's runtime limits, read at scrape time from the live
// objects (work budget, request limiter, decoded-block cache). A registry per server, so
// several decoders in one process (tests) each report their own.
import { Counter, Gauge, Registry } from "prom-client";
import type { Partition } from "../../shared/cost";
import type { DecodedBlockCache } from "../cog/block-cache";
import { jpegBuffers } from "../render/jpeg-encode";
import type { RequestLimiter } from "./request-limiter";
import type { WorkBudget } from "./work-budget";

export interface ServerMetrics {
  registry: Registry;
  /** Requests refused by the limiter, by the budget (after the retry), or ended by their deadline. */
  rejected: Counter<"reason">;
  /** Public requests whose first budget reservation failed and that waited for the exclusive retry. */
  budgetRetries: Counter<string>;
  /** Answers served from the stored tile bytes (codec passthrough). */
  passthrough: Counter<string>;
  /** TCP connections accepted. */
  connections: Counter<string>;
  decodes: RunningDecodes;
}

/**
 * Image requests between their work reservation and the end of their render, by the admission
 * partition they were granted from, and the most there ever were at once: the decoder's own
 * count of what admission let run, which a client that hangs up must not raise.
 */
export class RunningDecodes {
  readonly now: Record<Partition, number> = { tile: 0, full: 0 };
  readonly most: Record<Partition, number> = { tile: 0, full: 0 };
  readonly started: Record<Partition, number> = { tile: 0, full: 0 };

  /** Counts one decode in; the returned function counts it out (once). */
  start(partition: Partition): () => void {
    this.started[partition]++;
    this.most[partition] = Math.max(this.most[partition], ++this.now[partition]);
    let running = true;
    return () => {
      if (running) this.now[partition]--;
      running = false;
    };
  }
}

export function serverMetrics(
  budget: WorkBudget,
  limiter: RequestLimiter,
  transfers: RequestLimiter,
  cache: DecodedBlockCache,
  openSources: () => number,
): ServerMetrics {
  const registry = new Registry();
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(read()); } });
  gauge("tessera_decoder_work_budget_used_bytes", "Work-budget bytes reserved by active work now.", () => budget.usedBytes);
  gauge("tessera_decoder_work_budget_peak_bytes", "Most work-budget bytes ever reserved at once.", () => budget.peakBytes);
  gauge("tessera_decoder_work_budget_limit_bytes", "The work budget's allowance.", () => budget.limitBytes);
  gauge("tessera_decoder_work_budget_waiting", "Requests waiting for exclusive admission (their one retry).", () => budget.waiting);
  gauge("tessera_decoder_requests_in_flight", "Public requests holding a limiter permit.", () => limiter.inFlight);
  gauge("tessera_decoder_requests_in_flight_limit", "The request limiter's size.", () => limiter.max);
  gauge("tessera_decoder_file_transfers", "/file transfers streaming now (beside the limiter's requests).", () => transfers.inFlight);
  gauge("tessera_decoder_file_transfers_limit", "The cap on /file transfers at once.", () => transfers.max);
  gauge("tessera_decoder_open_sources", "Opened source snapshots kept (their headers parsed).", openSources);
  gauge("tessera_decoder_block_cache_bytes", "Decoded bytes resident in the block cache.", () => cache.bytes);
  gauge("tessera_decoder_block_cache_limit_bytes", "The block cache's byte cap.", () => cache.maxBytes);
  const decodes = new RunningDecodes();
  const byPartition = (name: string, help: string, read: (p: Partition) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ["partition"] as const,
      registers: [registry],
      collect() {
        for (const p of ["tile", "full"] as const) this.set({ partition: p }, read(p));
      },
    });
  byPartition("tessera_decoder_decodes_running", "Image decodes running now, by admission partition.", (p) => decodes.now[p]);
  byPartition("tessera_decoder_decodes_running_max", "Most image decodes ever running at once, by admission partition.", (p) => decodes.most[p]);
  new Counter({
    name: "tessera_decoder_decodes_total",
    help: "Image and tile decodes started, by admission partition (a full by its memory or its work).",
    labelNames: ["partition"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const p of ["tile", "full"] as const) this.inc({ partition: p }, decodes.started[p]);
    },
  });
  const counter = (name: string, help: string, read: () => number) =>
    new Counter({ name, help, registers: [registry], collect() { this.reset(); this.inc(read()); } });
  counter("tessera_decoder_block_cache_hits_total", "Blocks found decoded in the cache.", () => cache.hits);
  counter("tessera_decoder_block_cache_misses_total", "Blocks not in the cache (fetched, or joined to a fetch in progress).", () => cache.misses);
  counter("tessera_decoder_blocks_decoded_total", "Blocks fetched and decoded.", () => cache.decoded);
  counter("tessera_decoder_block_buffers_recycled_total", "Blocks decoded into the memory of an evicted block rather than new memory.", () => cache.recycled);
  counter("tessera_decoder_jpeg_buffers_allocated_total", "TurboJPEG output buffers allocated (process-wide); the rest were reused.", () => jpegBuffers.allocated);
  return {
    registry,
    rejected: new Counter({
      name: "tessera_decoder_rejected_total",
      help: "Requests refused: limiter (in-flight cap), budget (after the retry), deadline, cancelled.",
      labelNames: ["reason"] as const,
      registers: [registry],
    }),
    budgetRetries: new Counter({ name: "tessera_decoder_work_budget_retries_total", help: "Requests that took their one exclusive retry.", registers: [registry] }),
    passthrough: new Counter({ name: "tessera_decoder_passthrough_total", help: "Answers that are a stored tile's bytes, not re-encoded.", registers: [registry] }),
    connections: new Counter({
      name: "tessera_decoder_connections_total",
      help: "TCP connections accepted; far fewer than requests while the edge keeps its connections open.",
      registers: [registry],
    }),
    decodes,
  };
}
