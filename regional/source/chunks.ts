// A source's bytes as a stream of bounded ranged reads, so /file never holds a whole object.
import type { Source } from "./source";

const CHUNK_BYTES = 1 << 20;

/** Yields the whole snapshot in order, then closes the source (also when the reader stops early). */
export async function* sourceChunks(source: Source, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  try {
    for (let offset = 0; offset < source.size; offset += CHUNK_BYTES) {
      yield await source.read(offset, Math.min(CHUNK_BYTES, source.size - offset), signal);
    }
  } finally {
    await source.close();
  }
}
