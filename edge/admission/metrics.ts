// Prometheus text for GET /metrics: the admission model's gauges and counters under our prefixes
// (tessera_admission_*, tessera_decode_memory_*), plus the DO's own lease, timeout and
// routing counters. Counters are cumulative for the DO's lifetime.
import type { AdmissionDO } from "./admission-do";

/** The DO's own counters, beside the model's: leases, timeouts and routing (the table below says what each counts). */
export interface DoStats {
  released: number;
  leasesExpired: number;
  requestTimeouts: number;
  disagreements: number;
  decoderRetries: number;
  drainingResends: number;
}

type Sample = [labels: string, value: number];
type Metric = [name: string, type: "gauge" | "counter", help: string, value: number | Sample[]];

/** The full partition's memory budget, in all and on each decoder (this DO's share of its full memory). */
function memoryMetrics(d: AdmissionDO, now: number): Metric[] {
  const { fullMem, reservedBytes, counters: c } = d.model;
  const M = "tessera_decode_memory_";
  const decoders = d.decoders.memory(now);
  // By label, not URL: the page may be open to anyone, and a URL is an internal address.
  const label = (url: string) => `decoder="${d.decoderLabels.get(url) ?? "unknown"}"`;
  return [
    [`${M}budget_bytes`, "gauge", "full_mem = memory_limit × (1 − tiles_memory_ratio).", fullMem],
    [`${M}reserved_bytes`, "gauge", "Estimated bytes reserved by running full decodes.", reservedBytes],
    [
      `${M}decoder_budget_bytes`,
      "gauge",
      "This DO's share of each decoder's full memory: its memory × (1 − tiles_memory_ratio), split between the shards.",
      decoders.map((m): Sample => [label(m.url), m.shareBytes]),
    ],
    [`${M}decoder_reserved_bytes`, "gauge", "Estimated bytes of the running fulls this DO sent to each decoder.", decoders.map((m): Sample => [label(m.url), m.reservedBytes])],
    [`${M}rejected_total`, "counter", "Fulls shed with 503: the budget, or every decoder's share of it, was in use.", c.memoryRejected],
    [`${M}too_large_total`, "counter", "Fulls refused with 413: the estimate alone exceeds the budget or the largest decoder's share.", c.memoryTooLarge],
    [`${M}shadow_rejected_total`, "counter", "Basic mode: fulls advanced would have shed for the budget or the decoders' shares.", c.memoryShadowRejected],
    [`${M}shadow_too_large_total`, "counter", "Basic mode: fulls advanced would have refused with 413.", c.memoryShadowTooLarge],
  ];
}

export function admissionMetrics(d: AdmissionDO, now: number): string {
  const m = d.model;
  const c = m.counters;
  const a = d.config.admission;
  const A = "tessera_admission_";
  const metrics: Metric[] = [
    [`${A}permits_total`, "gauge", "Global decode permits (n).", m.nthreads],
    [`${A}permits_in_use`, "gauge", "Global decode permits held.", m.global.inUse],
    [`${A}full_in_use`, "gauge", "Held full-partition permits (basic mode: admitted fulls).", m.fullInUse],
    [`${A}tile_waiting`, "gauge", "Tile requests waiting for a global permit.", m.tileWaiting],
    [`${A}full_waiting`, "gauge", "Full requests waiting for a full or global permit.", m.fullWaiting],
    [`${A}tile_shed_total`, "counter", "Tile requests shed with 503.", c.tileShed],
    [`${A}full_shed_total`, "counter", "Full requests shed with 503 for want of a permit.", c.fullShed],
    [
      `${A}full_shadow_rejected_total`,
      "counter",
      "Basic mode: fulls admitted while full_max fulls ran (or with full_max 0), which advanced would have queued or shed.",
      c.fullShadowRejected,
    ],
    [
      `${A}classifier_disagreement_total`,
      "counter",
      "Answers whose edge tile/full verdict differed from the decoder's precise one.",
      d.stats.disagreements,
    ],
    [`${A}released_total`, "counter", "Leases released (decode finished, failed, abandoned or expired).", d.stats.released],
    [`${A}leases_expired_total`, "counter", "Leases reclaimed by the deadline alarm, not by their own path.", d.stats.leasesExpired],
    [`${A}request_timeouts_total`, "counter", "Requests that reached REQUEST_TIMEOUT (408).", d.stats.requestTimeouts],
    [`${A}coalesced_total`, "counter", "Decodes answered from an identical one in flight, not decoded again.", d.flights.coalesced],
    [`${A}coalescing`, "gauge", "Decodes in flight that identical requests arriving now would wait for.", d.flights.size],
    [`${A}decoder_retries_total`, "counter", "Forwards retried on another decoder after a connect failure.", d.stats.decoderRetries],
    [`${A}draining_resends_total`, "counter", "Forwards sent again to another decoder because theirs was draining.", d.stats.drainingResends],
    [`${A}file_transfers`, "gauge", "/file transfers streaming now (they hold no decode permit).", d.fileTransfers.inProgress],
    [`${A}file_transfers_shed_total`, "counter", "/file transfers refused with 503 at MAX_FILE_TRANSFERS.", d.fileTransfers.shed],
    [`${A}file_transfers_limit`, "gauge", "MAX_FILE_TRANSFERS.", d.config.maxFileTransfers],
    [`${A}upper_tier_hits_total`, "counter", "Decodes answered from the upper tier (this DO's location's cache): no permit, no decoder.", d.tier.hits],
    [`${A}upper_tier_misses_total`, "counter", "Decodes the edge may share that the upper tier did not hold (admitted and decoded, or coalesced).", d.tier.misses],
    [`${A}upper_tier_stored_total`, "counter", "Decoder answers kept in the upper tier (whole, shareable 200s).", d.tier.stored],
    [`${A}decoders_live`, "gauge", "Decoders that heartbeated within DECODER_TTL.", d.decoders.live(now).length],
    // The config fingerprint.
    [
      `${A}mode`,
      "gauge",
      "1 for the running mode; fallback=\"true\" when ADMISSION_MODE was unrecognized.",
      (["advanced", "basic"] as const).map((mode): Sample => [
        `mode="${mode}",fallback="${a.unrecognizedMode !== undefined}"`,
        a.mode === mode ? 1 : 0,
      ]),
    ],
    [`${A}tile_min_threads`, "gauge", "Global permits guaranteed to tiles.", m.tileMin],
    [`${A}full_max_threads`, "gauge", "Cap on concurrent full decodes.", m.fullMax],
    [`${A}tiles_thread_ratio`, "gauge", "TILES_THREAD_RATIO.", a.tilesThreadRatio],
    [`${A}tiles_memory_ratio`, "gauge", "TILES_MEMORY_RATIO.", a.tilesMemoryRatio],
    [`${A}memory_limit_bytes`, "gauge", "The RAM envelope (MEMORY_LIMIT, or the live decoders' sum).", m.memoryLimit],
    [`${A}large_decode_threshold_bytes`, "gauge", "LARGE_DECODE_THRESHOLD_BYTES.", a.largeDecodeThresholdBytes],
    [`${A}large_decode_threshold_work`, "gauge", "LARGE_DECODE_THRESHOLD_WORK (work units, each about a millisecond of one decoder core).", a.largeDecodeThresholdWork],
    ...memoryMetrics(d, now),
  ];
  return exposition(metrics);
}

/** Prometheus's text format. */
function exposition(metrics: Metric[]): string {
  const lines: string[] = [];
  for (const [name, type, help, value] of metrics) {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    if (typeof value === "number") lines.push(`${name} ${value}`);
    else for (const [labels, v] of value) lines.push(`${name}{${labels}} ${v}`);
  }
  return lines.join("\n") + "\n";
}
