// The upper tier: a cache in the admission DO's own location, in front of its decoders. The
// edge's Cache API is local to one data centre, so a tile viewers open in many cities would be
// a miss, an admission and a decode in each; the DO (one location per shard) looks the answer up
// here first and keeps what a decoder answers, so each tile is decoded about once per shard.
// The edge names the entry by its own cache key (cached-decode.ts decodedCacheKey: source,
// pixels and version) and sends none for a restricted source, so a private answer is never
// shared. A hit holds no permit and decodes nothing. Only whole 200s are kept: errors are the
// edge's to keep briefly, and a streamed (large) answer would have to be held whole here.
// An invalidation moves the source to a new generation, part of every key: the Cache API cannot
// list a source's entries to delete them, and the old generation's ones expire unread.
import type { DecodedAnswer } from "./answers";

/** The edge's cache key for a decode whose answer the tier may share (absent: never shared). */
export const TIER_KEY_HEADER = "x-tessera-tier-key";
/** The source that key belongs to, whose invalidation retires it. */
export const TIER_SOURCE_HEADER = "x-tessera-tier-source";
/** A named cache, apart from the edge's caches.default where the DO runs. */
const TIER_CACHE = "tessera-upper-tier";

/** A decode the tier may answer: its edge key and its source. */
export interface TierEntry {
  key: string;
  source: string;
}

export const tierEntryOf = (headers: Headers): TierEntry | undefined => {
  const key = headers.get(TIER_KEY_HEADER);
  const source = headers.get(TIER_SOURCE_HEADER);
  return key && source !== null && URL.canParse(key) ? { key, source } : undefined;
};

export class UpperTier {
  hits = 0;
  misses = 0;
  stored = 0;
  /** Each source's generation, read once from storage and kept beside it. */
  private readonly generations = new Map<string, number>();

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly cacheControl: string,
  ) {}

  /**
   * The stored answer (a hit), or the key to store the decoder's under (a miss); both counted.
   * The key is taken now: a decode that an invalidation overtakes is stored under the old generation.
   */
  async lookup(entry: TierEntry): Promise<{ hit: Response } | { key: string }> {
    const key = await this.keyOf(entry);
    const hit = await (await caches.open(TIER_CACHE)).match(key);
    if (hit) this.hits++;
    else this.misses++;
    return hit ? { hit } : { key };
  }

  /** Keeps a decoder's whole, shareable 200 under the key `lookup` gave; anything else is not kept. */
  async store(key: string, answer: DecodedAnswer): Promise<void> {
    if (answer.status !== 200 || !(answer.body instanceof ArrayBuffer)) return;
    if (/\b(private|no-store)\b/i.test(answer.headers.get("cache-control") ?? "")) return;
    const headers = new Headers(answer.headers);
    headers.set("cache-control", this.cacheControl);
    // A failed put costs only a later decode; the client's answer does not wait on it failing.
    await (await caches.open(TIER_CACHE)).put(key, new Response(answer.body, { headers })).then(
      () => this.stored++,
      (err) => console.log(JSON.stringify({ level: "warn", msg: `upper tier put failed: ${String(err)}` })),
    );
  }

  /** Retires every entry of `source`: later lookups use keys none was stored under. */
  async invalidate(source: string): Promise<void> {
    const next = (await this.generation(source)) + 1;
    this.generations.set(source, next);
    await this.storage.put(generationKey(source), next);
  }

  private async keyOf({ key, source }: TierEntry): Promise<string> {
    const generation = await this.generation(source);
    return `${key}${key.includes("?") ? "&" : "?"}tier-generation=${generation}`;
  }

  private async generation(source: string): Promise<number> {
    let n = this.generations.get(source);
    if (n === undefined) {
      n = (await this.storage.get<number>(generationKey(source))) ?? 0;
      this.generations.set(source, n);
    }
    return n;
  }
}

const generationKey = (source: string) => `upper-tier-generation/${source}`;
