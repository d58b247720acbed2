// GET /metrics across admission shards: every shard's page, each sample labelled with its
// region and shard, one HELP/TYPE per metric, and tessera_admission_shard_up per shard (0 for
// one that did not answer: the others are still reported). Without REGIONS and shards the lone
// DO's page is passed through as it is.
import type { Placement } from "../../shared/regions";
import { callShard } from "../admission-client";
import type { Env } from "../env";
import { METRICS_PATH } from "./admission-do";
import { everyShard, type Shard } from "./placement";

const UP = "tessera_admission_shard_up";

export async function shardMetrics(env: Env, p: Placement): Promise<Response> {
  const shards = everyShard(p);
  const ask = (s: Shard) => callShard(env, s, new Request(`https://admission${METRICS_PATH}`));
  if (!p.configured && p.shards === 1) return ask(shards[0]);
  const pages = await Promise.all(
    shards.map(async (s) => {
      try {
        const res = await ask(s);
        if (res.ok) return await res.text();
        await res.body?.cancel();
      } catch {
        // counted as down below; callShard has logged why
      }
      return undefined;
    }),
  );
  const families = new Map<string, string[]>();
  const family = (name: string) => families.get(name) ?? families.set(name, []).get(name)!;
  family(UP).push(`# HELP ${UP} 1 when the admission shard answered this scrape, 0 when it did not.`, `# TYPE ${UP} gauge`);
  shards.forEach((s, i) => {
    const labels = `region="${s.region}",shard="${s.shard}"`;
    family(UP).push(`${UP}{${labels}} ${pages[i] === undefined ? 0 : 1}`);
    for (const line of pages[i]?.split("\n") ?? []) {
      if (!line) continue;
      const comment = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (comment) {
        const lines = family(comment[2]);
        if (!lines.some((l) => l.startsWith(`# ${comment[1]} `))) lines.push(line);
        continue;
      }
      const [, name, own, value] = /^([^{ ]+)(?:\{(.*)\})? (.*)$/.exec(line) ?? [];
      if (name) family(name).push(`${name}{${labels}${own ? `,${own}` : ""}} ${value}`);
    }
  });
  return new Response([...families.values()].flat().join("\n") + "\n", {
    headers: { "content-type": "text/plain; version=0.0.4" },
  });
}
