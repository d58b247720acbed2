// Work that is throughput, not latency (large renders, JPEG 2000 encodes), runs on threads of a
// lower priority than the event loop and the libuv pool, which serve tiles: on a busy machine
// the scheduler runs tiles first, and idle CPU still goes to the rest. On Linux the nice value is
// per thread, so a thread lowers its own without touching the process's.
import { getPriority, setPriority } from "node:os";

/** Added to a background thread's nice value: at +10 it gets about a tenth of a normal thread's share. */
export const BACKGROUND_NICE_INCREMENT = 10;

/**
 * Sets the calling thread BACKGROUND_NICE_INCREMENT below the process's main thread (nice values
 * stop at 19): below the main thread, not below its creator, since a thread started by a
 * background thread (a render's JPEG 2000 encoder) inherits its nice value.
 */
export function runInBackground(): void {
  setPriority(Math.min(19, getPriority(process.pid) + BACKGROUND_NICE_INCREMENT));
}
