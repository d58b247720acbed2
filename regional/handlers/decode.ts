// Runs a costed decode (an image or a map tile) as every decode runs. With the DO's grant, a cost
// above it (bytes or work) goes back to the DO to be admitted again (GrantExceeded), and a full's
// memory must fit this decoder's own work budget (413 if it never can, 503 while it is in use):
// the DO's sums span decoders, this budget is the one envelope it runs in. Without a grant, the
// decoder's own limits: work that one core could not finish within the request's deadline is
// refused (413), and the memory comes from the work budget (one exclusive retry, 413 when it can
// never fit). All before any pixel is read. The answer carries the precise estimate, and its
// encoded bytes stay reserved until the last one is written.
import { DEFAULT_THRESHOLDS } from "../../shared/admission-config";
import { classify, ESTIMATE_HEADER, ESTIMATE_WORK_HEADER, GrantExceeded, tooMuchWork, type Partition } from "../../shared/cost";
import { VERSION_HEADER } from "../../shared/protocol";
import type { Opened } from "../cog/cog-cache";
import type { DecoderContext } from "../decoder";
import type { Answer } from "../http/answer";
import type { Grant } from "../http/signing";
import type { PreparedDecode } from "../render/prepared-decode";
import { admitWork, type Reservation } from "../runtime/work-budget";

export async function runDecode(
  decoder: DecoderContext,
  opened: Opened,
  prepared: PreparedDecode,
  signal: AbortSignal,
  grant: Grant | undefined,
): Promise<Answer> {
  const { cost } = prepared;
  const partition = grant?.partition ?? classify(cost, DEFAULT_THRESHOLDS);
  const work = await reserve(decoder, prepared, partition, signal, grant);
  const stopped = decoder.metrics.decodes.start(partition);
  const settled = decoder.settle.start(cost.bytes);
  try {
    const out = await prepared.render(signal, work, partition);
    // The encoded answer (its estimate's encode stage) stays reserved until its last byte is
    // written: a pooled answer holds its whole buffer, not only the body's bytes.
    const held = work.carve(out.done ? out.body.buffer.byteLength : out.body.length);
    return {
      status: 200,
      headers: {
        "content-type": out.contentType,
        [VERSION_HEADER]: opened.source.version,
        // The precise estimate, for the DO's classifier-disagreement count.
        [ESTIMATE_HEADER]: String(cost.bytes),
        [ESTIMATE_WORK_HEADER]: String(Math.ceil(cost.work)),
      },
      head: out.head,
      body: out.body,
      done: () => (out.done?.(), held.release()),
    };
  } finally {
    stopped();
    settled();
    work.release();
  }
}

/** The decode's memory, once its cost is known to be admissible here. */
async function reserve(decoder: DecoderContext, prepared: PreparedDecode, partition: Partition, signal: AbortSignal, grant?: Grant): Promise<Reservation> {
  const { cost, what } = prepared;
  const { budget, metrics } = decoder;
  if (grant) {
    // A full's grant is all of REQUEST_TIMEOUT: work beyond it could never be admitted.
    if (partition === "full" && cost.work > grant.work) throw tooMuchWork(cost.work, grant.work, prepared.workHelp);
    if (cost.bytes > grant.bytes || cost.work > grant.work) throw new GrantExceeded(cost);
    // A tile's memory is the DO's to bound (tiles bypass the full partition's budget); a full
    // must fit the envelope this decoder really has.
    return partition === "full" ? budget.tryReserve(cost.bytes, what, "full") : budget.takeGranted(cost.bytes);
  }
  if (cost.work > decoder.requestTimeoutMs) throw tooMuchWork(cost.work, decoder.requestTimeoutMs, prepared.workHelp);
  return admitWork(budget, cost.bytes, partition, what, signal, () => metrics.budgetRetries.inc());
}
