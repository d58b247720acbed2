// bench:hostile's crawlers on a thread of their own at the lowest priority (nice 19): on
// Cloudflare a flood's clients are elsewhere on the internet, and here they get only the CPU the
// stack leaves idle. workerData names the edge, the kind and how many crawlers; a message ends
// the flood, and the thread answers with how its requests were answered.
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import { KINDS } from "./hostile-kinds";
import { crawl } from "./load";

setPriority(19); // on Linux, the calling thread's alone
const { base, kind, crawlers } = workerData as { base: string; kind: string; crawlers: number };
const stop = new AbortController();
const { flood, done } = crawl(base, KINDS[kind], crawlers, stop.signal);
parentPort!.once("message", async () => {
  stop.abort();
  await done;
  parentPort!.postMessage(flood);
});
