// bench:flood's crawler URLs, a module of their own so that the crawlers' thread (crawl-thread.ts)
// builds the same URLs as the bench.

/**
 * The crawlers' URLs against the 6000 px image `id` and its 11000 px companion `huge-<id>`:
 * distinct pct: regions at max size, and the huge image's max.
 */
export function fullUrls(id: string): (i: number) => string {
  return (i) => {
    if (i % 4 === 3) return `/iiif/3/huge-${id}/full/max/0/default.jpg`;
    const w = 50 + (i % 41); // 50..90 % of each side: a 3000–5400 px output, always a full
    const x = (i * 13) % (101 - w);
    const y = (i * 7) % (101 - w);
    return `/iiif/3/${id}/pct:${x},${y},${w},${w}/max/0/default.jpg`;
  };
}
