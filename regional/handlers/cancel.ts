// POST /v1/cancel/{requestId}: the admission DO's client went away; stop that request's I/O at its
// next read or stage boundary. Answered at once (204), known id or not: the request's own answer,
// sent once it has stopped, is what tells the DO its permit and memory are free again.
import type { Handler } from "../http/router";

export const cancel: Handler<{ requestId: string }> = ({ params }, decoder) => {
  decoder.cancellations.cancel(params.requestId);
  return { status: 204, headers: {}, body: Buffer.alloc(0) };
};
