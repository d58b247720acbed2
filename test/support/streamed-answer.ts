// The large answer of the Worker tests' streaming decoder (test/support/workers-global-setup.ts),
// known to both sides: the decoder sends it, the tests check every byte of it.

/** Above STREAM_ANSWER_BYTES's default (1 MiB): the DO and the Worker stream it. */
export const STREAMED_BYTES = 3 * 1024 * 1024;
/** What the decoder sends before it waits (or dies). */
export const FIRST_PART_BYTES = 256 * 1024;

/** The answer's bytes, pseudo-random, so a chunk lost, doubled or moved shows. */
export function streamedAnswer(): Uint8Array {
  const bytes = new Uint8Array(STREAMED_BYTES);
  let x = 1;
  for (let i = 0; i < bytes.length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    bytes[i] = x >>> 24;
  }
  return bytes;
}
