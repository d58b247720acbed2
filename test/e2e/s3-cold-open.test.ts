// The first view of a source nobody has opened, over a real versioned store (local Ceph RGW)
// behind fake remote-region latency: how many store round trips, one after another, a user waits
// for. Opening reads the catalog entry and the object's first bytes (which hold the header) at
// once, with no HEAD; the tile's bytes are the only read after that.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { S3Client } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureVersionedBucket, makeS3Client, startLocalS3, type LocalS3 } from "../../infra/local/s3";
import { infoThenTile, startColdDecoder, tileFirst, type ColdDecoder, type ColdStep } from "../support/cold-open";
import { describeRequests } from "../support/remote-region";
import { DECODER } from "../../shared/protocol";

const COG = readFileSync(fileURLToPath(new URL("../../samples/test-pattern.tif", import.meta.url)));
const BUCKET = `cold-${Date.now().toString(36)}`;
/** Enough that every request the decoder waits for shows in its timing, small enough to stay quick. */
const DELAY_MS = 20;
const TILE = 256;

let s3: LocalS3 | undefined;
let client: S3Client;
let decoder: ColdDecoder;
let fresh = 0;

/** A source id nothing has opened yet, holding the sample COG. */
async function unopened(): Promise<string> {
  const id = `pattern-${++fresh}`;
  await decoder.put(id, COG);
  return id;
}

/** The step's round trips, with its requests listed when the count is not the one expected. */
const roundTrips = (step: ColdStep) => ({ count: step.roundTrips, requests: describeRequests(step.requests, step.requests[0]?.start) });

beforeAll(async () => {
  s3 = await startLocalS3();
  client = makeS3Client(s3);
  await ensureVersionedBucket(client, BUCKET);
  decoder = await startColdDecoder(s3, BUCKET, DELAY_MS);
});

afterAll(async () => {
  await decoder?.close();
  client?.destroy();
  await s3?.stop();
});

describe("the first view of an unopened source, with fake remote-region latency", () => {
  it("a tile first takes two sequential round trips: the header with the catalog entry, then the tile", async () => {
    const tile = await tileFirst(decoder, await unopened(), TILE);
    expect(tile.status).toBe(200);
    expect(await sharp(tile.body).metadata()).toMatchObject({ width: TILE, height: TILE });
    expect(roundTrips(tile)).toMatchObject({ count: 2 });
    expect(tile.requests.map((r) => r.method)).not.toContain("HEAD");
  });

  it("info.json first takes one round trip, and the tile after it one more", async () => {
    const { info, tile } = await infoThenTile(decoder, await unopened(), TILE);
    expect([info.status, tile.status]).toEqual([200, 200]);
    expect(roundTrips(info)).toMatchObject({ count: 1 });
    expect(roundTrips(tile)).toMatchObject({ count: 1 });
    // What the wait was: the entry and the object's first bytes side by side, then the tile's bytes.
    expect(info.requests.map((r) => r.range ?? r.method).sort()).toEqual(["GET", "bytes=0-65535"]);
    expect(tile.requests).toHaveLength(1);
  });

  it("a catalog entry pinning the latest version costs no extra round trip; one pinning an earlier version, one", async () => {
    const pinned = `pinned-${++fresh}`;
    const current = await decoder.put(pinned, COG);
    await decoder.putEntry(pinned, { pin: current, policy: "RequireValidator", pins: [] });
    const pinnedLatest = (await infoThenTile(decoder, pinned, TILE)).info;
    expect(pinnedLatest.version).toBe(current);
    expect(roundTrips(pinnedLatest)).toMatchObject({ count: 1 });

    const rolledBack = `rolled-back-${++fresh}`;
    const earlier = await decoder.put(rolledBack, COG);
    await decoder.put(rolledBack, COG);
    await decoder.putEntry(rolledBack, { pin: earlier, policy: "RequireValidator", pins: [] });
    const { info } = await infoThenTile(decoder, rolledBack, TILE);
    expect(info.version).toBe(earlier);
    expect(roundTrips(info)).toMatchObject({ count: 2 });
  });

  it("a mosaic's info.json takes two: its COG is looked for first, then its documents at once, which come whole", async () => {
    const id = `mosaic-${++fresh}`;
    await decoder.putMosaic(id, { mosaicjson: "0.0.3", minzoom: 1, maxzoom: 2, bounds: [-10, -10, 10, 10], tiles: { "0": ["cold/members/a.tif"] } });
    const info = await decoder.step(DECODER.info(id));
    expect(info.status).toBe(200);
    expect(roundTrips(info)).toMatchObject({ count: 2 });
    expect(info.requests).toHaveLength(4); // the entry, the COG, the MosaicJSON and STAC documents
  });

  it("the stored file of a source that fits in the opening read is that one round trip", async () => {
    const id = `file-${++fresh}`;
    const file = await decoder.step(DECODER.file(id, await decoder.put(id, COG)));
    expect(file.status).toBe(200);
    expect(file.body.equals(COG)).toBe(true);
    expect(roundTrips(file)).toMatchObject({ count: 1 });
  });
});
