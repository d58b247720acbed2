// Mosaics, STAC sources and stored styles in a versioned bucket (local Ceph RGW), through the
// whole stack (edge, admission, an S3 decoder): a MosaicJSON document and its members as store
// keys, tiles whose pixels this test computes from the fixtures' value functions, the document
// pinned to its version, a replaced member kept at its snapshot until the publisher invalidates
// it, the access policy refusing keys outside its prefixes, a STAC Item's relative hrefs, and a
// `{name}.style.json` document naming the same tile as its spelled-out query.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureVersionedBucket, makeS3Client, s3DecoderEnv, startLocalS3, type LocalS3 } from "../../infra/local/s3";
import { startStack, type Stack } from "../../infra/local/stack";
import { tileToQuadkey } from "../../shared/maps/mosaic-json";
import {
  gridPixel,
  MONO_MOSAIC_TILES,
  MOSAIC_DOCUMENTS,
  MOSAIC_FIXTURES,
  MOSAIC_PARENT,
  MOSAIC_Z,
  mosaicFixtures,
  type MosaicFixture,
} from "../support/mosaic-fixtures";

const BUCKET = `mosaic-${Date.now().toString(36)}`;
const PREFIX = "maps/";
/** Where the members live: the only keys the decoder's access policy allows. */
const MEMBERS = `${PREFIX}members/`;
const TOKEN = "mosaic-admin-token";
const Z = MOSAIC_Z;
const [P, Q] = [2 * MOSAIC_PARENT.x, 2 * MOSAIC_PARENT.y];
const { monoA, monoB, monoC } = MOSAIC_FIXTURES;

let s3: LocalS3 | undefined;
let client: S3Client;
let stack: Stack | undefined;
let fixtures: string;
let scratch: string;

const put = async (key: string, body: Uint8Array | string) =>
  (await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }))).VersionId!;
const fixtureFile = (name: string) => readFileSync(path.join(fixtures, name));

/** The mono mosaic's document with its assets as full keys under MEMBERS, each list in `order`. */
function monoDocument(order: (list: string[]) => string[]): string {
  const doc = JSON.parse(fixtureFile(MOSAIC_DOCUMENTS.monoMosaic).toString()) as { tiles: Record<string, string[]> };
  doc.tiles = Object.fromEntries(Object.entries(MONO_MOSAIC_TILES).map(([key, list]) => [key, order(list.map((a) => MEMBERS + a))]));
  return JSON.stringify(doc);
}

beforeAll(async () => {
  fixtures = mosaicFixtures();
  scratch = mkdtempSync(path.join(tmpdir(), "tessera-s3-mosaic-"));
  s3 = await startLocalS3(); // the run's RGW; this suite's bucket is its own
  client = makeS3Client(s3);
  await ensureVersionedBucket(client, BUCKET);
  for (const f of [monoA, monoB, monoC]) await put(MEMBERS + f.key, fixtureFile(f.key));
  stack = await startStack({
    decoderEnv: { ...s3DecoderEnv(s3, BUCKET), TESSERA_S3_PREFIX: PREFIX, TESSERA_ASSET_PREFIXES: MEMBERS },
    vars: { ADMIN_TOKEN: TOKEN },
  });
});
afterAll(async () => {
  await stack?.stop();
  client?.destroy();
  await s3?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const get = (route: string) => fetch(stack!.url + route);
const tileRoute = (id: string, [z, x, y]: number[], query = "") =>
  `/tiles/${encodeURIComponent(id)}/WebMercatorQuad/${z}/${x}/${y}.png${query ? `?${query}` : ""}`;

async function invalidate(id: string, member?: string): Promise<void> {
  const query = member ? `?member=${encodeURIComponent(member)}` : "";
  const res = await fetch(`${stack!.url}/admin/sources/${encodeURIComponent(id)}/invalidate${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

interface Pixels {
  channels: number;
  data: Buffer;
}

async function tilePixels(route: string): Promise<Pixels> {
  const res = await get(route);
  expect(res.status, await res.clone().text()).toBe(200);
  const { data, info } = await sharp(Buffer.from(await res.arrayBuffer())).raw().toBuffer({ resolveWithObject: true });
  expect(info.width).toBe(256);
  return { channels: info.channels, data };
}

/**
 * With `first` (the default), tile pixel (px, py) holds the first listed asset valid there, or
 * nothing (transparent): checked on every 17th pixel against the fixtures' own values.
 */
function expectFirstValid(tile: Pixels, paintOrder: MosaicFixture[], [z, x, y]: number[]): void {
  const { channels, data } = tile;
  for (let py = 0; py < 256; py += 17) {
    for (let px = 0; px < 256; px += 17) {
      const at = (py * 256 + px) * channels;
      const winner = paintOrder
        .map((f) => ({ f, cell: gridPixel(f, z, x, y, px, py) }))
        .find(({ f, cell }) => cell && f.valid(cell[0], cell[1], 0));
      const alpha = channels === 2 || channels === 4 ? data[at + channels - 1] : 255;
      const where = `${z}/${x}/${y} pixel (${px}, ${py})`;
      if (!winner) {
        expect(alpha, where).toBe(0);
        continue;
      }
      expect(alpha, where).toBe(255);
      expect(data[at], where).toBe(winner.f.value(winner.cell![0], winner.cell![1], 0));
    }
  }
}

const Q2 = [Z, P, Q + 1]; // where all three overlap: listed c, a, b
const Q1 = [Z, P + 1, Q]; // mono-b alone

describe("a MosaicJSON document and its members in the bucket", () => {
  let firstVersion: string;

  it("serves tiles whose pixels are the fixtures', TileJSON, and no IIIF", async () => {
    firstVersion = await put(`${PREFIX}mono.mosaic.json`, monoDocument((list) => list));
    expectFirstValid(await tilePixels(tileRoute("mono", Q2)), [monoC, monoA, monoB], Q2);
    expectFirstValid(await tilePixels(tileRoute("mono", Q1)), [monoB], Q1);

    const tilejson = await get("/tiles/mono/WebMercatorQuad/tilejson.json");
    expect(tilejson.status).toBe(200);
    expect(((await tilejson.json()) as { tiles: string[] }).tiles[0]).toContain("/tiles/mono");
    const info = await get("/iiif/3/mono/info.json");
    expect(info.status).toBe(404);
    expect(await info.text()).toMatch(/served as map tiles only/);
  });

  it("pins the document to its version: the snapshot keeps the old composition, the plain id follows the new", async () => {
    const secondVersion = await put(`${PREFIX}mono.mosaic.json`, monoDocument((list) => [...list].reverse()));
    expect(secondVersion).not.toBe(firstVersion);
    const snapshot = `mono@${firstVersion}`;
    const old = await get(tileRoute(snapshot, Q2));
    expect(old.headers.get("x-tessera-version")).toBe(firstVersion);
    expectFirstValid(await tilePixels(tileRoute(snapshot, Q2)), [monoC, monoA, monoB], Q2);

    await invalidate("mono");
    const now = await get(tileRoute("mono", Q2));
    expect(now.headers.get("x-tessera-version")).toBe(secondVersion);
    expectFirstValid(await tilePixels(tileRoute("mono", Q2)), [monoB, monoA, monoC], Q2);
  });

  it("keeps a replaced member at its snapshot until the member is invalidated", async () => {
    // The decoder has opened mono-b (tile q1 above). Its new version is its negative, 255 − value
    // (GDAL keeps the nodata pixels nodata).
    const negative = path.join(scratch, "mono-b-negative.tif");
    execFileSync("gdal_translate", [
      "-q", "-of", "COG", "-scale", "0", "255", "255", "0", "-co", "COMPRESS=DEFLATE", "-co", "BLOCKSIZE=256",
      path.join(fixtures, monoB.key), negative,
    ]);
    await put(MEMBERS + monoB.key, readFileSync(negative));
    const negativeB: MosaicFixture = { ...monoB, value: (col, row, band) => 255 - monoB.value(col, row, band) };

    // Zoom Z+1 children of q1: tiles the edge has not cached (it caches by the document's version).
    const child = (i: number) => [Z + 1, 2 * Q1[1] + (i % 2), 2 * Q1[2] + Math.floor(i / 2)];
    expectFirstValid(await tilePixels(tileRoute("mono", child(0))), [monoB], child(0));
    await invalidate("mono", MEMBERS + monoB.key);
    expectFirstValid(await tilePixels(tileRoute("mono", child(1))), [negativeB], child(1));
  });

  it("refuses a member outside the access policy's prefixes, before reading it", async () => {
    // A key that does not exist: were it read, the decoder would fail on the store, not refuse.
    const outside = `${PREFIX}private/${monoB.key}`;
    const doc = JSON.parse(monoDocument((list) => list)) as { tiles: Record<string, string[]> };
    doc.tiles[tileToQuadkey(Z, Q1[1], Q1[2])] = [outside];
    await put(`${PREFIX}outside.mosaic.json`, JSON.stringify(doc));
    // The answer says the policy refused an asset; which one and why is in the decoder's error
    // line of the same request id (the edge logs the decoder's answer, without them).
    const records: Record<string, unknown>[] = [];
    const collect = (line: string) => {
      if (line.startsWith("{")) records.push(JSON.parse(line));
    };
    stack!.decoders[0].errors.on("line", collect);
    try {
      const res = await get(tileRoute("outside", Q1));
      expect(res.status).toBe(502);
      expect(await res.text()).not.toContain(outside);
      const requestId = res.headers.get("x-request-id");
      await expect.poll(() => records.find((r) => r.msg === "refused" && r.requestId === requestId)?.detail).toBe(
        `${outside}: a mosaic asset is refused by the access policy: store key is outside the allowed prefixes (${MEMBERS})`,
      );
    } finally {
      stack!.decoders[0].errors.off("line", collect);
    }
  });
});

describe("a STAC Item and a style document in the bucket", () => {
  it("reads a STAC Item's relative hrefs as keys beside it", async () => {
    const item = JSON.parse(fixtureFile(MOSAIC_DOCUMENTS.scene).toString()) as { bbox: number[]; assets: Record<string, { href: string }> };
    for (const asset of Object.values(item.assets)) {
      const file = asset.href.replace(/^\.\//, "");
      await put(MEMBERS + file, fixtureFile(file));
      asset.href = `./members/${file}`; // relative to the document's folder, PREFIX
    }
    await put(`${PREFIX}scene.stac.json`, JSON.stringify(item));
    const [west, south, east, north] = item.bbox;
    const [x, y] = lonLatTile((west + east) / 2, (south + north) / 2, Z);
    const { channels, data } = await tilePixels(tileRoute("scene", [Z, x, y], "assets=B04,B03,B02&rescale=0,3000"));
    // The tile holding the scene's centre is inside it (a scene spans about 6 × 6 tiles at Z):
    // every band file was read, so every pixel is opaque colour, and a tile opaque everywhere is
    // written without alpha.
    expect(channels).toBe(3);
    expect(data.some((v) => v > 0)).toBe(true);
  });

  it("names by style={name} the same tile as the spelled-out query", async () => {
    await put(`${PREFIX}warm.style.json`, JSON.stringify({ rescale: [[100, 160]], colormap_name: "magma" }));
    const named = await get(tileRoute("mono", Q2, "style=warm"));
    const spelled = await get(tileRoute("mono", Q2, "rescale=100,160&colormap_name=magma"));
    expect(named.status, await named.clone().text()).toBe(200);
    expect(spelled.status).toBe(200);
    expect(named.headers.get("etag")).toBeTruthy();
    expect(named.headers.get("etag")).toBe(spelled.headers.get("etag"));
    expect(Buffer.from(await named.arrayBuffer())).toEqual(Buffer.from(await spelled.arrayBuffer()));
  });
});

/** The WebMercatorQuad tile at zoom z holding longitude/latitude (degrees). */
function lonLatTile(lon: number, lat: number, z: number): [number, number] {
  const n = 2 ** z;
  const rad = (lat * Math.PI) / 180;
  return [Math.floor(((lon + 180) / 360) * n), Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n)];
}
