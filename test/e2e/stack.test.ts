// The whole path: a COG in a versioned bucket on a real Ceph RGW, the real decoder process,
// the edge Worker and admission DO in workerd (Miniflare), driven over HTTP like a viewer.
// (A client's disconnect is tested in test/workers: Miniflare's HTTP entry does not pass it on.)
import { readFile } from "node:fs/promises";
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureVersionedBucket, makeS3Client, s3DecoderEnv, startLocalS3 } from "../../infra/local/s3";
import { killDecoder } from "../../infra/local/decoders";
import { startStack, type Stack } from "../../infra/local/stack";
import { sumMetric } from "../support/metrics";
import { meanAbsDiff, reference } from "../support/pixels";

const JPEG_TOLERANCE = 6; // mean absolute difference per channel, 0..255
const bucket = `e2e-${Date.now()}`;
let stack: Stack;
let client: S3Client;

const decoderRequests = async () =>
  (await sumMetric(stack.decoders[0].url, 'tessera_decoder_requests_total{route="image"')) +
  (await sumMetric(stack.decoders[0].url, 'tessera_decoder_requests_total{route="info"'));
const edgeMetric = (name: string) => sumMetric(stack.url, `tessera_admission_${name} `);
const get = (path: string, init?: RequestInit) => fetch(stack.url + path, init);
const bytes = async (res: Response) => new Uint8Array(await res.arrayBuffer());

beforeAll(async () => {
  const s3 = await startLocalS3();
  client = makeS3Client(s3);
  await ensureVersionedBucket(client, bucket);
  const body = await readFile(new URL("../../samples/test-pattern.tif", import.meta.url));
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: "test-pattern.tif", Body: body }));
  stack = await startStack({
    decoderEnv: s3DecoderEnv(s3, bucket),
    vars: { REQUEST_TIMEOUT: "3", QUEUE_TIMEOUT: "1", NTHREADS: "2" },
  });
});
afterAll(async () => {
  await stack?.stop();
});

describe("IIIF through edge, admission and decoder from a versioned S3 COG", () => {
  it("answers info.json from the COG's real structure", async () => {
    const res = await get("/iiif/3/test-pattern/info.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("x-tessera-version")).toBeTruthy();
    const info = await res.json();
    expect(info).toMatchObject({
      // PLAIN_ID_MODE "revalidate", the default: the id is the base URI asked for.
      id: `${stack.url}/iiif/3/test-pattern`,
      type: "ImageService3",
      width: 1000,
      height: 1000,
      tiles: [{ width: 256, height: 256, scaleFactors: [1, 2, 4] }],
    });
  });

  it("runs its decoder with the documented limits when none is set: a 512 MiB work budget, 64 requests in flight", async () => {
    const decoder = (name: string) => sumMetric(stack.decoders[0].url, `tessera_decoder_${name} `);
    expect(await decoder("work_budget_limit_bytes")).toBe(512 * 2 ** 20);
    expect(await decoder("requests_in_flight_limit")).toBe(64);
    // A tile and a full image reserve from it, and give it all back.
    for (const p of ["/iiif/3/test-pattern/0,0,256,256/256,/0/default.jpg", "/iiif/3/test-pattern/full/200,/0/default.png"]) {
      const res = await get(p);
      expect(res.status, p).toBe(200);
      await res.arrayBuffer();
    }
    expect(await decoder("work_budget_peak_bytes")).toBeGreaterThan(0);
    await expect.poll(() => decoder("work_budget_used_bytes")).toBe(0);
  });

  it("keeps serving a snapshot after a publish: the versioned bucket still has the version it names, and the plain id moves on", async () => {
    const publish = async (sample: string) => {
      const body = await readFile(new URL(`../../samples/${sample}`, import.meta.url));
      const put = await client.send(new PutObjectCommand({ Bucket: bucket, Key: "published.tif", Body: body }));
      return { body, snapshot: `published@${encodeURIComponent(put.VersionId!)}`, version: put.VersionId! };
    };
    const first = await publish("test-pattern.tif");
    const second = await publish("test-pattern-deflate.tif");
    const current = await get("/iiif/3/published/info.json");
    expect(current.headers.get("x-tessera-version")).toBe(second.version);
    expect(((await current.json()) as { id: string }).id).toBe(`${stack.url}/iiif/3/published`); // the default, revalidate
    for (const { body, snapshot } of [first, second]) {
      const file = await get(`/iiif/3/${snapshot}/file`);
      expect(file.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(await bytes(file)).toEqual(new Uint8Array(body));
      const tile = await get(`/iiif/3/${snapshot}/0,0,256,256/max/0/default.jpg`);
      expect(tile.status).toBe(200);
      expect(await meanAbsDiff(await bytes(tile), reference({ x: 0, y: 0, w: 256, h: 256 }, 256, 256))).toBeLessThan(JPEG_TOLERANCE);
    }
  });

  it("serves tiles whose pixels match the reference, at native and reduced resolution", async () => {
    // full/250 is the stored 250 px overview, which GDAL resampled its own way: it differs from
    // the reference (sharp's lanczos of the PNG) by more than JPEG loss alone.
    const OVERVIEW_TOLERANCE = JPEG_TOLERANCE + 1.5;
    for (const [path, region, w, h, tolerance] of [
      ["/iiif/3/test-pattern/0,0,256,256/max/0/default.jpg", { x: 0, y: 0, w: 256, h: 256 }, 256, 256, JPEG_TOLERANCE],
      ["/iiif/3/test-pattern/100,100,100,100/max/0/default.jpg", { x: 100, y: 100, w: 100, h: 100 }, 100, 100, JPEG_TOLERANCE],
      ["/iiif/3/test-pattern/full/250,/0/default.jpg", { x: 0, y: 0, w: 1000, h: 1000 }, 250, 250, OVERVIEW_TOLERANCE],
      ["/iiif/3/test-pattern/512,512,488,488/244,244/0/default.jpg", { x: 512, y: 512, w: 488, h: 488 }, 244, 244, OVERVIEW_TOLERANCE],
    ] as const) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/jpeg");
      expect(await meanAbsDiff(await bytes(res), reference(region, w, h)), path).toBeLessThan(tolerance);
    }
  });

  it("answers a repeat, and an equivalent spelling, from the edge cache without the decoder", async () => {
    const first = await get("/iiif/3/test-pattern/256,0,256,256/max/0/default.jpg");
    expect(first.headers.get("x-tessera-cache")).toBe("miss");
    const firstBytes = await bytes(first);
    await new Promise((r) => setTimeout(r, 100)); // the cache write runs after the answer
    const before = await decoderRequests();
    for (const path of [
      "/iiif/3/test-pattern/256,0,256,256/max/0/default.jpg",
      "/iiif/3/test-pattern/256,0,256,256/256,/0/default.jpg",
      "/iiif/3/test-pattern/256,0,256,256/,256/0/default.jpg",
    ]) {
      const res = await get(path);
      expect(res.headers.get("x-tessera-cache"), path).toBe("hit");
      expect(await bytes(res)).toEqual(firstBytes);
    }
    expect(await decoderRequests()).toBe(before);
  });

  it("answers malformed URLs with 400 and unknown sources with 404, and frees every permit", async () => {
    for (const path of [
      "/iiif/3/test-pattern/0,0,0,10/max/0/default.jpg",
      "/iiif/3/test-pattern/full/2000,/0/default.jpg",
      "/iiif/3/test-pattern/5000,5000,10,10/max/0/default.jpg",
      "/iiif/3/test-pattern/full/max/0/default.bmp",
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe("bad_request");
    }
    expect((await get("/iiif/3/no-such-image/info.json")).status).toBe(404);
    expect(await edgeMetric("permits_in_use")).toBe(0);
  });

  it("refuses a direct decoder request without the edge's signature", async () => {
    const res = await fetch(`${stack.decoders[0].url}/v1/info/test-pattern`);
    expect(res.status).toBe(401);
  });

  it("answers 408 at the deadline, and keeps the permit of the hung decode until the decoder answers that it stopped", async () => {
    const released = await edgeMetric("released_total");
    const expired = await edgeMetric("leases_expired_total");
    stack.decoders[0].process.kill("SIGSTOP"); // a real hang: the process is frozen
    try {
      const started = Date.now();
      const res = await get("/iiif/3/test-pattern/0,0,100,100/max/0/default.jpg");
      expect(res.status).toBe(408);
      expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
      // The client has its answer; the decode may still run, so its permit is not given away.
      expect(await edgeMetric("permits_in_use")).toBe(1);
    } finally {
      stack.decoders[0].process.kill("SIGCONT");
    }
    // Thawed, the decoder finds its own (signed) deadline passed and answers: that ends the lease.
    await expect.poll(() => edgeMetric("permits_in_use"), { timeout: 5000 }).toBe(0);
    expect(await edgeMetric("released_total")).toBe(released + 1);
    expect(await edgeMetric("leases_expired_total")).toBe(expired);
  });

  it("sheds with 503 + Retry-After when every permit stays busy past the queue timeout", async () => {
    stack.decoders[0].process.kill("SIGSTOP");
    try {
      const paths = [1, 2, 3].map((i) => `/iiif/3/test-pattern/0,0,${130 + i},${130 + i}/max/0/default.jpg`);
      const answers = await Promise.all(paths.map((p) => get(p)));
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses).toEqual([408, 408, 503]);
      expect(answers.find((r) => r.status === 503)!.headers.get("retry-after")).toBe("1");
    } finally {
      stack.decoders[0].process.kill("SIGCONT");
    }
    await expect.poll(() => edgeMetric("permits_in_use"), { timeout: 5000 }).toBe(0);
  });

  it("answers 502 when the decoder is gone, and frees the permit", async () => {
    await killDecoder(stack.decoders[0]);
    const res = await get("/iiif/3/test-pattern/0,0,140,140/max/0/default.jpg");
    expect(res.status).toBe(502);
    const { message } = (await res.json()) as { message: string };
    expect(message).toMatch(/no decoder could be reached/);
    expect(message).not.toContain(stack.decoders[0].url); // the log names it, the answer does not
    expect(await edgeMetric("permits_in_use")).toBe(0);
  });
});
