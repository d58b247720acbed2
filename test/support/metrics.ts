// Reading Prometheus text (the edge's or a decoder's `/metrics`) in tests and benches.

/** Sum of the samples whose name and labels start with `prefix` (end a bare name with a space). */
export async function sumMetric(url: string, prefix: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(prefix))
    .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
}

/** Polls `check` every 100 ms until it holds; throws after `ms`. */
export async function until(check: () => Promise<boolean>, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One bucket of an unlabelled histogram: how many observations were at most `le`. */
export interface Bucket {
  le: number;
  count: number;
}

/** An unlabelled histogram's buckets in Prometheus text, lowest first, +Inf (Infinity) last. */
export function histogram(text: string, name: string): Bucket[] {
  return [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, "gm"))].map((m) => ({
    le: m[1] === "+Inf" ? Infinity : Number(m[1]),
    count: Number(m[2]),
  }));
}

/**
 * The longest observation between two readings of a histogram, as closely as its buckets tell:
 * the upper bound of the lowest bucket that holds all that was observed since `before` (0: none).
 */
export function longestSince(before: Bucket[], after: Bucket[]): number {
  const grown = (i: number) => after[i].count - (before[i]?.count ?? 0);
  const all = after.length > 0 ? grown(after.length - 1) : 0;
  if (all === 0) return 0;
  return after.find((_, i) => grown(i) === all)!.le;
}
