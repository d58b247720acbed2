// Where a load bench's crawlers run (bench:flood, bench:hostile). On Cloudflare a flood's clients
// are on the internet and its requests run in edge isolates of their own, meeting the viewers only
// in the admission DO and the decoders. Faked on this machine: the crawlers on a thread of their
// own at nice 19 (crawl-thread.ts), through a second edge location (a workerd of its own sharing
// the first's DO) whose workerd runs at nice 19 too, so both get the CPU the stack leaves idle.
// With both at the stack's priority, a flood's client and edge took over a core of the two.

import { readdirSync } from "node:fs";
import { setPriority } from "node:os";
import { Worker } from "node:worker_threads";
import { startStack, type Stack, type StackOptions } from "../infra/local/stack";
import { workerdPid } from "../test/support/workerd-process";
import { crawl, crawlerUrls, type CrawlerUrls, type Flood } from "./load";

/**
 * Edge locations (BENCH_LOCATIONS, default 2). With two, the crawlers run elsewhere, as above; with
 * one, as the benches first ran them: on the bench's thread, through the viewers' edge, at the
 * stack's priority.
 */
export const LOCATIONS = Number(process.env.BENCH_LOCATIONS ?? 2);

/**
 * The stack with LOCATIONS edge locations, the last one's workerd at nice 19 when there are more
 * than one: a flood's edge isolates are not on the decoders' machine, and here they get only the
 * CPU the stack leaves idle.
 */
export async function startLoadStack(options: StackOptions): Promise<Stack> {
  const stack = await startStack({ ...options, locations: LOCATIONS });
  if (LOCATIONS > 1) atLowestPriority(workerdPid(stack.locations.at(-1)!));
  return stack;
}

/** Every thread of the process `pid` at nice 19. */
function atLowestPriority(pid: number): void {
  for (const tid of readdirSync(`/proc/${pid}/task`)) setPriority(Number(tid), 19);
}

/**
 * `crawlers` crawlers of `urls` against a stack from `startLoadStack`. With more than one location,
 * on a thread at nice 19 through the last location (crawl-thread.ts); with one, on this thread
 * through the viewers' edge. `stop` ends the flood and tells how its requests were answered.
 */
export async function startFlood(stack: Stack, urls: CrawlerUrls, crawlers: number): Promise<{ stop(): Promise<Flood> }> {
  if (stack.locations.length === 1) {
    const stop = new AbortController();
    const crawler = crawl(stack.url, await crawlerUrls(urls), crawlers, stop.signal);
    return { stop: async () => (stop.abort(), await crawler.done, crawler.flood) };
  }
  const thread = new Worker(new URL("./crawl-thread.ts", import.meta.url), { workerData: { base: stack.locations.at(-1), urls, crawlers } });
  return {
    async stop() {
      const answered = new Promise<Flood>((resolve) => thread.once("message", resolve));
      thread.postMessage("stop");
      const flood = await answered;
      await thread.terminate();
      return flood;
    },
  };
}
