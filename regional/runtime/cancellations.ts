// Requests the admission DO may cancel by the id it gave them (REQUEST_ID_HEADER). When the DO's
// client goes away, its cancel stops the request's I/O at the next read or stage boundary. Work
// already inside libvips finishes first; the request's own answer, sent once it has stopped, is
// what tells the DO that its permit and memory are free again.

import { badRequest } from "../../shared/errors";

export class Cancellations {
  private readonly requests = new Map<string, AbortController>();

  /** Registers a request under the DO's id, if it has one; the returned function forgets it. */
  track(requestId: string | null | undefined, controller: AbortController): () => void {
    if (!requestId) return () => {};
    if (this.requests.has(requestId)) throw badRequest(`request id ${requestId} is already in use`);
    this.requests.set(requestId, controller);
    return () => this.requests.delete(requestId);
  }

  /** Aborts the request of that id, if it is still running. */
  cancel(requestId: string): void {
    this.requests.get(requestId)?.abort(new DOMException("cancelled: the client went away", "AbortError"));
  }
}
