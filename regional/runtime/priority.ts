// Work that is throughput, not latency (large renders, JPEG 2000 encodes), runs at a lower
// priority than the event loop and the libuv pool, which serve tiles: on a busy machine the
// scheduler runs tiles first, and idle CPU still goes to the rest. Large renders run in child
// processes started at that priority (render-pool.ts), so that every thread they start inherits
// it: libvips's workers and V8's collector threads too, which a nice value set on one thread of
// the decoder never reached. On Linux the nice value is per thread, so a thread of the decoder
// (the JPEG 2000 encoder's) lowers its own without touching the process's.
import { getPriority, setPriority } from "node:os";

/** Added to a background thread's nice value: at +10 it gets about a tenth of a normal thread's share. */
export const BACKGROUND_NICE_INCREMENT = 10;

/** Set in a render process's environment: its threads, a worker's too, know the whole process is in the background. */
export const BACKGROUND_PROCESS_ENV = "TESSERA_RENDER_PROCESS";

/** Whether this process is a render process, started BACKGROUND_NICE_INCREMENT below the decoder. */
export const inBackgroundProcess = (): boolean => process.env[BACKGROUND_PROCESS_ENV] === "1";

/**
 * Sets the calling thread BACKGROUND_NICE_INCREMENT below the process's main thread (nice values
 * stop at 19), unless the whole process already is: in a render process it stays where it
 * started, at the process's priority, BACKGROUND_NICE_INCREMENT below the decoder's.
 */
export function runInBackground(): void {
  if (inBackgroundProcess()) return;
  setPriority(Math.min(19, getPriority(process.pid) + BACKGROUND_NICE_INCREMENT));
}
