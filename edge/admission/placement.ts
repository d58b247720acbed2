// Which admission DO a call goes to: one per shard of each region (shared/regions.ts), each
// created with its region's location hint so it runs near that region's decoders.
import { regionsFor, shardName, shardOf, type Placement } from "../../shared/regions";
import type { Env } from "../env";

/** A region's admission DO answers a decode with this header when the region has no live decoder. */
export const NO_DECODERS_HEADER = "x-tessera-no-decoders";

export interface Shard {
  region: string;
  shard: number;
  /** The DO's name: "region/shard", or "default" without REGIONS and shards. */
  name: string;
}

export const shard = (p: Placement, region: string, index: number): Shard => ({ region, shard: index, name: shardName(p, region, index) });

/** Every shard of `region`: a decoder's heartbeat reaches them all. */
export const shardsOf = (p: Placement, region: string): Shard[] => Array.from({ length: p.shards }, (_, i) => shard(p, region, i));

/** Every shard of every region, nearest region first. */
export const everyShard = (p: Placement): Shard[] => p.regions.flatMap((r) => shardsOf(p, r.name));

/** The shard that admits `sourceId` in each region that serves it, in the order to try them. */
export function sourceShards(p: Placement, sourceId: string): Shard[] {
  const index = shardOf(p, sourceId);
  return regionsFor(p, sourceId).map((region) => shard(p, region, index));
}

export function shardStub(env: Env, p: Placement, s: Shard) {
  const locationHint = p.regions.find((r) => r.name === s.region)?.locationHint;
  return env.ADMISSION.get(env.ADMISSION.idFromName(s.name), locationHint ? { locationHint } : {});
}
