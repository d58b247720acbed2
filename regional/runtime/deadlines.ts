// Cooperative cancellation helpers: one AbortSignal per request, threaded down to every read.

import { abortReason, untilAborted } from "../../shared/abort";
import { HttpError } from "../../shared/errors";

/** Default bound on shared work (a source open, header and tile-table reads) and on each S3 call. */
export const DEFAULT_SHARED_WORK_TIMEOUT_MS = 10_000;


/**
 * Runs work done once for many requests. No request's own signal may cancel it, so it has its
 * own deadline: past `timeoutMs` its signal aborts and it fails with 504, so a stalled store
 * fails it for everyone waiting instead of holding each of them until its own deadline. `what`
 * the work is goes to the client; `whose` (a source's label, a mosaic member's key) to the log.
 */
export async function withSharedDeadline<T>(
  timeoutMs: number,
  what: string,
  whose: string,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const late = `${what} took longer than ${timeoutMs} ms`;
  const timer = setTimeout(() => controller.abort(new HttpError("gateway_timeout", late, undefined, `${whose}: ${late}`)), timeoutMs);
  try {
    return await untilAborted(work(controller.signal), controller.signal);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A request's signal: aborts when `parent` does (the client went away) or after `timeoutMs`
 * (reason: a 408 HttpError). The deadline covers everything after admission: opening the
 * source, budget waits, I/O and encoding. Call `done()` when the answer is complete.
 */
export function withDeadline(parent: AbortSignal, timeoutMs: number): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const onParent = () => controller.abort(abortReason(parent));
  if (parent.aborted) onParent();
  else parent.addEventListener("abort", onParent, { once: true });
  const timer = setTimeout(
    () => controller.abort(new HttpError("deadline", `request deadline of ${timeoutMs} ms exceeded`)),
    timeoutMs,
  );
  return {
    signal: controller.signal,
    done() {
      clearTimeout(timer);
      parent.removeEventListener("abort", onParent);
    },
  };
}
