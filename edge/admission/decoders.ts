// The decoders the admission DO knows: who heartbeated within DECODER_TTL, what they can take,
// and how busy each is with this DO's forwards. Routing picks the least loaded live decoder; a
// full goes only to one whose full memory, as this DO's share of it, has room for its estimate.

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

/** A full's estimated bytes held on the decoder it is sent to, until `release` (idempotent). */
export interface FullHold {
  readonly decoder: Decoder;
  /** Whether the bytes count against the decoder's share (basic mode also holds fulls past it). */
  readonly counted: boolean;
  release(): void;
}

/** A decoder's full memory as this DO sees it: its share, and the fulls' bytes held there. */
export interface DecoderMemory {
  url: string;
  shareBytes: number;
  reservedBytes: number;
}

export class DecoderRegistry {
  private readonly byUrl = new Map<string, Decoder>();
  /**
   * The fulls' bytes held on each decoder, by URL: a decoder forgotten while its fulls still run
   * there keeps them when it heartbeats again. `counted` is the part held against its share.
   */
  private readonly held = new Map<string, { reserved: number; counted: number }>();
  private picks = 0;

  /** `fullShare`: this DO's share of the full memory of a decoder that reports `memoryBytes`. */
  constructor(
    private readonly ttlMs: number,
    private readonly fullShare: (memoryBytes: number) => number,
  ) {}

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
   * The live decoder with the lowest load, skipping `exclude` and those `fits` refuses; among
   * equals the one picked longest ago, so an idle fleet still shares the work.
   */
  pick(now: number, exclude?: string, fits: (d: Decoder) => boolean = () => true): Decoder | undefined {
    let best: Decoder | undefined;
    for (const d of this.live(now)) {
      if (d.url === exclude || !fits(d)) continue;
      if (!best || load(d) < load(best) || (load(d) === load(best) && d.lastPicked < best.lastPicked)) best = d;
    }
    if (best) best.lastPicked = ++this.picks;
    return best;
  }

  /**
   * Holds a full's `bytes` on the least loaded live decoder whose share has that much room,
   * counted against it; uncounted, on the least loaded whatever its room. Undefined when none.
   */
  holdFull(now: number, bytes: number, counted: boolean): FullHold | undefined {
    const decoder = this.pick(now, undefined, counted ? (d) => this.room(d) >= bytes : undefined);
    if (!decoder) return undefined;
    const held = this.held.get(decoder.url) ?? this.held.set(decoder.url, { reserved: 0, counted: 0 }).get(decoder.url)!;
    held.reserved += bytes;
    if (counted) held.counted += bytes;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      held.reserved -= bytes;
      if (counted) held.counted -= bytes;
      if (held.reserved === 0 && this.held.get(decoder.url) === held) this.held.delete(decoder.url);
    };
    return { decoder, counted, release };
  }

  /** This DO's share of each live decoder's full memory and the bytes held there, and of any gone that still holds some. */
  memory(now: number): DecoderMemory[] {
    const live = this.live(now).map((d) => ({ url: d.url, shareBytes: this.fullShare(d.memoryBytes), reservedBytes: this.held.get(d.url)?.reserved ?? 0 }));
    const gone = [...this.held].filter(([url]) => !live.some((d) => d.url === url));
    return [...live, ...gone.map(([url, held]) => ({ url, shareBytes: 0, reservedBytes: held.reserved }))];
  }

  /**
   * Capacity and memory of the live decoders, for NTHREADS=0 / MEMORY_LIMIT=0, and the largest
   * share of one's full memory (none live: undefined): one request runs on one decoder, so no
   * grant may exceed it.
   */
  totals(now: number): { capacity: number; memoryBytes: number; largestFullShare?: number } {
    let capacity = 0;
    let memoryBytes = 0;
    let largestFullShare: number | undefined;
    for (const d of this.live(now)) {
      capacity += d.capacity;
      memoryBytes += d.memoryBytes;
      largestFullShare = Math.max(largestFullShare ?? 0, this.fullShare(d.memoryBytes));
    }
    return { capacity, memoryBytes, largestFullShare };
  }

  /** What is left of this DO's share of `d`'s full memory. */
  private room(d: Decoder): number {
    return this.fullShare(d.memoryBytes) - (this.held.get(d.url)?.counted ?? 0);
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
