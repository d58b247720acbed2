// Publishers racing readers on the real stack (versioned RGW, an S3 decoder, the edge): two
// writers publish new versions of one source (upload, pin, invalidate), alternating two pictures
// told apart by their pixels, while readers fetch its tiles as fast as they can. Every image
// answered is wholly the picture of the version it names: none mixes two versions.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SourceStore } from "../../cli/source-store";
import { ensureVersionedBucket, makeS3Client, startLocalS3, type LocalS3 } from "../../infra/local/s3";
import { ROOT, startStack, type Stack } from "../../infra/local/stack";
import { meanAbsDiff, reference } from "../support/pixels";

const SAMPLE = path.join(ROOT, "samples/test-pattern.tif");
const BUCKET = `race-${Date.now().toString(36)}`;
const TOKEN = "race-test-token";
const JPEG_TOLERANCE = 6;

let s3: LocalS3 | undefined;
let client: S3Client;
let stack: Stack;
let dir: string;
let inverted: string;

beforeAll(async () => {
  s3 = await startLocalS3();
  client = makeS3Client(s3);
  await ensureVersionedBucket(client, BUCKET);
  dir = await mkdtemp(path.join(tmpdir(), "tessera-race-"));
  inverted = path.join(dir, "inverted.tif");
  execFileSync("gdal_translate", [
    "-q", "-of", "COG", "-scale", "0", "255", "255", "0", "-co", "COMPRESS=JPEG", "-co", "BLOCKSIZE=256", SAMPLE, inverted,
  ]);
  stack = await startStack({
    decoderEnv: {
      TESSERA_SOURCE: "s3",
      TESSERA_S3_ENDPOINT: s3.endpoint,
      TESSERA_S3_BUCKET: BUCKET,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    },
    vars: { ADMIN_TOKEN: TOKEN, INFO_MAX_AGE: "1" },
  });
});
afterAll(async () => {
  await stack?.stop();
  client?.destroy();
  await s3?.stop();
  await rm(dir, { recursive: true, force: true });
});

it("no image answered while versions are published mixes two versions", async () => {
  const store = new SourceStore(client, BUCKET, "");
  const pictureOf = new Map<string, "A" | "B">();
  pictureOf.set(await store.upload("race", SAMPLE), "A");
  const end = Date.now() + 4000;

  const writer = async (picture: "A" | "B") => {
    while (Date.now() < end) {
      const version = await store.upload("race", picture === "A" ? SAMPLE : inverted);
      pictureOf.set(version, picture);
      await store.pin("race", version);
      const res = await fetch(`${stack.url}/admin/sources/race/invalidate`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
  };
  const answers: { status: number; version: string | null; body: Uint8Array; region: { x: number; y: number; w: number; h: number } }[] = [];
  let next = 0;
  const reader = async () => {
    while (Date.now() < end) {
      const i = next++;
      const region = { x: (i % 30) * 25, y: (Math.floor(i / 30) * 25) % 750, w: 250, h: 250 };
      const res = await fetch(`${stack.url}/iiif/3/race/${region.x},${region.y},${region.w},${region.h}/max/0/default.jpg`);
      answers.push({ status: res.status, version: res.headers.get("x-tessera-version"), body: new Uint8Array(await res.arrayBuffer()), region });
    }
  };
  await Promise.all([writer("B"), writer("A"), ...Array.from({ length: 6 }, reader)]);

  const served = answers.filter((a) => a.status === 200);
  const seen = { A: 0, B: 0 };
  for (const { version, body, region } of served) {
    const picture = pictureOf.get(version ?? "");
    expect(picture, `version ${version}`).toBeDefined();
    const expected = picture === "A" ? reference(region) : reference(region).negate({ alpha: false });
    expect(await meanAbsDiff(body, expected), `${version} ${JSON.stringify(region)}`).toBeLessThan(JPEG_TOLERANCE);
    seen[picture!]++;
  }
  const others = answers.filter((a) => a.status !== 200).map((a) => a.status);
  console.log(`race: ${pictureOf.size} versions published, ${answers.length} answers, ${served.length} × 200 (A ${seen.A}, B ${seen.B}), others`, others);
  expect(seen.A).toBeGreaterThan(0);
  expect(seen.B).toBeGreaterThan(0);
  for (const status of others) expect([503]).toContain(status);
}, 60_000);
