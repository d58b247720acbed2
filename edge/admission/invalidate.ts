// A source's invalidation, sent to every live decoder of this DO's region: each forgets its
// opened snapshots of the source, so the next request reads what the store holds now.
import { HttpError } from "../../shared/errors";
import { DECODER } from "../../shared/protocol";
import { decoderHeaders } from "./decoder-calls";
import type { DecoderFetch } from "./decoder-link";
import type { Decoder, DecoderRegistry } from "./decoders";
import { logDecoderFailure } from "./faults";
import type { Leases } from "./leases";

/** What the fan-out takes from the DO. */
export interface InvalidateHost {
  decoderSecret: string;
  fetchDecoder: DecoderFetch;
  decoders: DecoderRegistry;
  leases: Pick<Leases, "lease">;
}

/**
 * Tells every live decoder to forget its opened snapshots of `id` (with `member`, of that
 * asset of the mosaic `id`: invalidate_source(mosaic, member)). Admitted as a tile, like
 * metadata: it decodes nothing and holds no memory, only a global permit for its fan-out, and
 * as a full a publisher could never invalidate where full_max or the full memory is 0 (fulls
 * shed or 413 there). The admin token bounds who may send it. Answers how many decoders
 * confirmed and how many snapshots they dropped; 502 when none of several confirmed.
 */
export async function invalidate(host: InvalidateHost, id: string, member: string | undefined, client: AbortSignal, requestId?: string): Promise<Response> {
  const lease = await host.leases.lease("tile", 0, client);
  try {
    const path = DECODER.invalidate(id, member);
    const live = host.decoders.live(Date.now());
    const dropped = await Promise.all(live.map((decoder) => tell(host, decoder, path, lease.signal, requestId)));
    const confirmed = dropped.filter((n) => n !== undefined);
    if (live.length > 0 && confirmed.length === 0) throw new HttpError("bad_gateway", "no decoder confirmed the invalidation");
    return Response.json({
      id,
      ...(member !== undefined && { member }),
      decoders: live.length,
      invalidated: confirmed.length,
      dropped: confirmed.reduce((sum, n) => sum + n, 0),
    });
  } finally {
    lease.release();
  }
}

/** How many snapshots `decoder` dropped; undefined (logged) when it did not confirm. */
async function tell(host: InvalidateHost, decoder: Decoder, path: string, signal: AbortSignal, requestId?: string): Promise<number | undefined> {
  try {
    const headers = await decoderHeaders(host.decoderSecret, "POST", path, undefined, requestId);
    const res = await host.fetchDecoder(decoder.url, path, { method: "POST", headers, signal });
    if (res.ok) return ((await res.json()) as { dropped: number }).dropped;
    logDecoderFailure(decoder.url, `invalidate answered ${res.status}: ${await res.text()}`, requestId);
  } catch (err) {
    logDecoderFailure(decoder.url, `invalidate failed: ${String(err)}`, requestId);
  }
  return undefined;
}
