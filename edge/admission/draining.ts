// A decoder that is shutting down answers every new request 503 with DRAINING_HEADER before
// doing any work on it. Unlike any other answer, that one may be sent again: the DO forgets
// the decoder (as if its leaving heartbeat had arrived) and forwards the request, still under
// its permit and deadline, to another live decoder.
import { DRAINING_HEADER } from "../../shared/protocol";

/** The decoder refused the request because it is draining: nothing was done. */
export class DecoderDraining extends Error {
  constructor(readonly decoderUrl: string) {
    super(`decoder ${decoderUrl} is draining`);
    this.name = "DecoderDraining";
  }
}

export const isDrainingAnswer = (res: Response) => res.status === 503 && res.headers.has(DRAINING_HEADER);
