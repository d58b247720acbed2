// What a decode route hands the server before any pixel I/O: its precise cost (peak bytes,
// reserved from the work budget or checked against the DO's grant), a name for refusals, and
// the render to run once the work is admitted.
import type { Reservation } from "./work-budget";

export interface PreparedDecode {
  cost: number;
  what: string;
  render(signal: AbortSignal, work: Reservation): Promise<{ body: Buffer; contentType: string }>;
}
