// The decoders the admission DO knows: who heartbeated within DECODER_TTL, what they can take,
// and how busy each is with this DO's forwards. Routing picks the least loaded live decoder.

import type { Heartbeat } from "../../shared/registration";

export interface Decoder extends Heartbeat {
  lastSeen: number;
  /** Forwards from this DO currently in flight on it, and how many of them are fulls. */
  inFlight: number;
  fullsInFlight: number;
  /** When it was last picked (a sequence number): ties go to the longest unpicked. */
  lastPicked: number;
  /** When it last answered a forward (epoch ms; 0: not since it registered or last failed). */
  answeredAt: number;
}

/**
 * How long an answer vouches that a decoder accepts connections: within it a forward goes
 * straight to the decoder, without first opening a connection to see whether it would open.
 */
export const ANSWER_VOUCHES_MS = 1000;

export class DecoderRegistry {
  private readonly byUrl = new Map<string, Decoder>();
  private picks = 0;

  constructor(private readonly ttlMs: number) {}

  heartbeat(report: Heartbeat, now: number): void {
    // A leaving decoder is draining: no new work, and out of the sums, from now on.
    if (report.leaving) return this.forget(report.url);
    // Updated in place: forwards in flight hold this object and decrement its inFlight.
    const known = this.byUrl.get(report.url);
    if (known) Object.assign(known, report, { lastSeen: now });
    else this.byUrl.set(report.url, { ...report, lastSeen: now, inFlight: 0, fullsInFlight: 0, lastPicked: 0, answeredAt: 0 });
  }

  /** A decoder we could not connect to, or that is leaving, is gone until it heartbeats again. */
  forget(url: string): void {
    this.byUrl.delete(url);
  }

  live(now: number): Decoder[] {
    return [...this.byUrl.values()].filter((d) => now - d.lastSeen < this.ttlMs);
  }

  /**
   * The live decoder with the lowest load, skipping `exclude`; among equals the one picked
   * longest ago, so an idle fleet still shares the work.
   */
  pick(now: number, exclude?: string): Decoder | undefined {
    let best: Decoder | undefined;
    for (const d of this.live(now)) {
      if (d.url === exclude) continue;
      if (!best || load(d) < load(best) || (load(d) === load(best) && d.lastPicked < best.lastPicked)) best = d;
    }
    if (best) best.lastPicked = ++this.picks;
    return best;
  }

  /**
   * Capacity and memory of the live decoders, for NTHREADS=0 / MEMORY_LIMIT=0, and the memory of
   * the largest: one request runs on one decoder, so no grant may exceed what it holds.
   */
  totals(now: number): { capacity: number; memoryBytes: number; largestMemoryBytes: number } {
    let capacity = 0;
    let memoryBytes = 0;
    let largestMemoryBytes = 0;
    for (const d of this.live(now)) {
      capacity += d.capacity;
      memoryBytes += d.memoryBytes;
      largestMemoryBytes = Math.max(largestMemoryBytes, d.memoryBytes);
    }
    return { capacity, memoryBytes, largestMemoryBytes };
  }
}

/**
 * In-flight share of capacity, where a decoder running a full decode counts as full already:
 * a full holds the decoder's event loop for seconds (geotiff.js decodes on it), so a tile sent
 * there waits behind it. Tiles then go to decoders without one while those have room.
 */
function load(d: Decoder): number {
  return (d.inFlight + (d.fullsInFlight > 0 ? d.capacity : 0)) / d.capacity;
}
