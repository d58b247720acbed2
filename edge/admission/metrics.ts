// Prometheus text for the admission gauges and counters.
import type { PermitPool } from "./permit-pool";

const P = "tessera_admission_";

export function admissionMetrics(pool: PermitPool, released: number): string {
  return [
    `# HELP ${P}permits_total Global decode permits.`,
    `# TYPE ${P}permits_total gauge`,
    `${P}permits_total ${pool.total}`,
    `# HELP ${P}permits_in_use Global decode permits held.`,
    `# TYPE ${P}permits_in_use gauge`,
    `${P}permits_in_use ${pool.inUse}`,
    `# HELP ${P}waiting Requests waiting for a permit.`,
    `# TYPE ${P}waiting gauge`,
    `${P}waiting ${pool.waiting}`,
    `# HELP ${P}released_total Permits released after their decode finished, failed or was abandoned.`,
    `# TYPE ${P}released_total counter`,
    `${P}released_total ${released}`,
    "",
  ].join("\n");
}
