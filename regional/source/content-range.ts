// The Content-Range of a ranged GET's answer, read the same way for every store: it is how an
// opening read learns the object's size, and how every later read checks it got what it asked.

/** `bytes FIRST-LAST/TOTAL` as numbers, or undefined for anything else (`*`, a bad or unsafe number). */
export function parseContentRange(value: string | undefined): { first: number; last: number; total: number } | undefined {
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value ?? "");
  if (!m) return undefined;
  const [first, last, total] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const sane = [first, last, total].every(Number.isSafeInteger) && first <= last && last < total;
  return sane ? { first, last, total } : undefined;
}
