// A flood's crawlers on a thread of their own at the lowest priority (nice 19): on Cloudflare a
// flood's clients are elsewhere on the internet, and here they get only the CPU the stack leaves
// idle. workerData names the edge, the crawlers' URLs (a module's export, which this thread
// imports itself: a function cannot cross to a thread) and how many crawlers; a message ends the
// flood, and the thread answers with how its requests were answered.
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import { crawl, crawlerUrls, type CrawlerUrls } from "./load";

setPriority(19); // on Linux, the calling thread's alone
const { base, urls, crawlers } = workerData as { base: string; urls: CrawlerUrls; crawlers: number };
const stop = new AbortController();
const { flood, done } = crawl(base, await crawlerUrls(urls), crawlers, stop.signal);
parentPort!.once("message", async () => {
  stop.abort();
  await done;
  parentPort!.postMessage(flood);
});
