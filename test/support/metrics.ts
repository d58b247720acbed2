// Reading a running stack's Prometheus text (the edge's or a decoder's `/metrics`) in e2e tests.

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
