// Every route that reads a source by id reads it here: at the version the edge pinned, from the
// decoder's cache of opened snapshots, after the one id rule. A store or decode failure drops the
// snapshot, so the next request opens it afresh; anything else (an encoder refusing the request)
// leaves it open, so repeating one URL cannot force a full re-open on every request.
import { HttpError } from "../../shared/errors";
import type { Cog } from "../cog/cog";
import type { LeaseOptions } from "../cog/cog-cache";
import type { DecoderContext } from "../decoder";
import type { Answer } from "../http/answer";
import type { Mosaic } from "../mosaic/mosaic";
import { knownSourceId } from "../../shared/source-id";

export async function withSnapshot(
  decoder: DecoderContext,
  id: string,
  version: string | undefined,
  signal: AbortSignal,
  fn: (opened: Cog | Mosaic) => Promise<Answer>,
  options: LeaseOptions = {},
): Promise<Answer> {
  return decoder.snapshots.use(
    knownSourceId(id),
    version,
    signal,
    async (opened) => {
      try {
        return await fn(opened);
      } catch (e) {
        if (!signal.aborted && isStoreFailure(e)) decoder.snapshots.evict(id, opened.source.version);
        throw e;
      }
    },
    options,
  );
}

/** Failures that may mean the snapshot (or our copy of its headers) is unusable: the source and TIFF layers report those as 502/504. */
function isStoreFailure(e: unknown): boolean {
  return e instanceof HttpError && (e.kind === "bad_gateway" || e.kind === "gateway_timeout");
}
