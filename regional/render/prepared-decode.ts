// What a decode route prepares before any pixel I/O, for the one decode step every decode takes
// (handlers/decode.ts): its precise cost (peak bytes, reserved from the work budget or checked
// against the DO's grant; work, checked against the grant or the decoder's own limit), a name for
// refusals, and the render to run once the work is admitted, told the partition it runs in.
import type { Cost, Partition } from "../../shared/cost";
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
  cost: Cost;
  what: string;
  /** What to say, on a 413 for too much work, would help (a smaller size, fewer terms). */
  workHelp: string;
  render(signal: AbortSignal, work: Reservation, partition: Partition): Promise<EncodedAnswer>;
}
