// A source's bytes as a stream of bounded ranged reads, so /file never holds a whole object. The
// bytes its opening read brought go first, with no read of their own.
import type { Source } from "./source";

const CHUNK_BYTES = 1 << 20;

/**
 * Yields the whole snapshot in order, then closes the source. Not an async generator: return()
 * on a generator that never started skips its finally, and a reader that is gone before the
 * first chunk (or stops early) must close the source all the same.
 */
export function sourceChunks(source: Source, signal: AbortSignal): AsyncIterableIterator<Uint8Array> {
  let offset = 0;
  const finish = async (): Promise<IteratorResult<Uint8Array>> => {
    await source.close();
    return { done: true, value: undefined };
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (offset >= source.size) return finish();
      if (offset === 0 && source.firstBytes?.length) {
        offset = source.firstBytes.length;
        return { done: false, value: source.firstBytes };
      }
      const length = Math.min(CHUNK_BYTES, source.size - offset);
      try {
        const value = await source.read(offset, length, signal);
        offset += length;
        return { done: false, value };
      } catch (e) {
        await source.close();
        throw e;
      }
    },
    return: finish,
  };
}
