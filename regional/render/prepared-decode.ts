// What a decode route prepares before any pixel I/O, for the one decode step every decode takes
// (handlers/decode.ts): its precise cost (peak bytes, reserved from the work budget or checked
// against the DO's grant), a name for refusals, and the render to run once the work is admitted.
import type { Reservation } from "../runtime/work-budget";

/** An encoded answer; `done`, when present, takes back its body's memory once it is written. */
export interface EncodedAnswer {
  /** Bytes sent before `body`, shared by many answers (a stored JPEG tile's tables): no copy. */
  head?: Buffer;
  body: Buffer;
  contentType: string;
  done?: () => void;
}

export interface PreparedDecode {
  cost: number;
  what: string;
  render(signal: AbortSignal, work: Reservation): Promise<EncodedAnswer>;
}
