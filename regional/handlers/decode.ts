// Runs a costed decode (an image or a map tile) as every decode runs: within the DO's grant its
// work is reserved at once (above it the DO must re-admit it: GrantExceeded); without a grant,
// from this decoder's work budget (one exclusive retry, 413 when it can never fit). The answer
// carries the precise estimate, and its encoded bytes stay reserved until the last one is written.
import { ADMISSION_DEFAULTS } from "../../shared/admission-config";
import { classify, ESTIMATE_HEADER, GrantExceeded } from "../../shared/cost";
import { VERSION_HEADER } from "../../shared/protocol";
import type { Opened } from "../cog/cog-cache";
import type { DecoderContext } from "../decoder";
import type { Answer } from "../http/answer";
import type { Grant } from "../http/signing";
import type { PreparedDecode } from "../render/prepared-decode";
import { admitWork } from "../runtime/work-budget";

export async function runDecode(
  decoder: DecoderContext,
  opened: Opened,
  prepared: PreparedDecode,
  signal: AbortSignal,
  grant: Grant | undefined,
): Promise<Answer> {
  const { cost, what } = prepared;
  const { budget, metrics } = decoder;
  if (grant && cost > grant.bytes) throw new GrantExceeded(cost);
  const work = grant ? budget.takeGranted(cost) : await admitWork(budget, cost, what, signal, () => metrics.budgetRetries.inc());
  const stopped = metrics.decodes.start(grant?.partition ?? classify(cost, ADMISSION_DEFAULTS.LARGE_DECODE_THRESHOLD_BYTES));
  try {
    const out = await prepared.render(signal, work);
    // The encoded answer (its estimate's encode stage) stays reserved until its last byte is
    // written: a pooled answer holds its whole buffer, not only the body's bytes.
    const held = work.carve(out.done ? out.body.buffer.byteLength : out.body.length);
    return {
      status: 200,
      headers: {
        "content-type": out.contentType,
        [VERSION_HEADER]: opened.source.version,
        // The precise peak-memory estimate, for the DO's classifier-disagreement count.
        [ESTIMATE_HEADER]: String(cost),
      },
      head: out.head,
      body: out.body,
      done: () => (out.done?.(), held.release()),
    };
  } finally {
    stopped();
    work.release();
  }
}
