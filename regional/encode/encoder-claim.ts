// The word an OpenJPEG worker thread and the thread that owns it share (openjpeg.ts,
// openjpeg-worker.ts), so that the worker can end itself once idle even when its owner is
// busy: a render process's thread decoding blocks synchronously runs no timers meanwhile. The owner marks the
// word BUSY before it hands over a tile and IDLE once it waits for none; the worker retires only
// by turning IDLE into RETIRED, and an owner that finds RETIRED starts a new worker.

export const IDLE = 0;
export const BUSY = 1;
export const RETIRED = 2;

/** A new worker's word: BUSY, since it is started for a tile. */
export function newClaim(): Int32Array {
  const claim = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  claim[0] = BUSY;
  return claim;
}
