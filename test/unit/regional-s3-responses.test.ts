// The S3 source against a store that answers a ranged GET with another version or another
// range than asked: the read fails, and the response body is destroyed at once rather than
// left holding its connection (and the store's transfer) until garbage collection. And the
// opening read: one ranged GET whose size the operator sets. And what a client is told of a
// store that refuses or holds a broken catalog entry: never the bucket or the key, which the
// decoder logs with the request id.

import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { makeS3Client } from "../../infra/local/s3";
import { readConfig } from "../../regional/config";
import { S3SourceCatalog } from "../../regional/source/s3";
import { DECODER } from "../../shared/protocol";
import { refusalLog, signedGet, startDecoder } from "./regional-helpers";

const SIZE = 64 << 20;
const READ = 32 << 20;

/** What the store gets wrong in its GET answer. */
let wrong: { versionId?: string; contentRange?: string } = {};
/** A status the store refuses every GET of the object with; a catalog entry it holds. */
let store: { refuse?: number; entry?: string } = {};
/** The Range of every GET of the object, in order. */
const ranges: string[] = [];
/** Resolves when the store's GET answer is closed before all of it was sent. */
let cutShort: Promise<void>;
let server: Server;
let endpoint: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    // No catalog entry (unless a test stores one): the source is served at its latest version.
    if (req.url?.includes(".tessera.json")) {
      return void (store.entry === undefined ? res.writeHead(404).end("<Error><Code>NoSuchKey</Code></Error>") : res.writeHead(200).end(store.entry));
    }
    if (store.refuse) return void res.writeHead(store.refuse).end("<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>");
    const headers = { etag: '"abc"', "last-modified": new Date(0).toUTCString() };
    ranges.push(req.headers.range ?? "");
    const [, from, to] = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? "")!.map(Number);
    res.writeHead(206, {
      ...headers,
      "x-amz-version-id": wrong.versionId ?? "v1",
      "content-range": wrong.contentRange ?? `bytes ${from}-${to}/${SIZE}`,
      "content-length": String(to - from + 1),
    });
    void stream(res, to - from + 1);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** Sends `length` bytes as the client takes them; notes a close before the end. */
async function stream(res: ServerResponse, length: number): Promise<void> {
  let closed!: () => void;
  cutShort = new Promise((r) => (closed = r));
  res.on("close", () => {
    if (!res.writableFinished) closed();
  });
  const chunk = Buffer.alloc(1 << 16);
  for (let sent = 0; sent < length && !res.destroyed; sent += chunk.length) {
    if (!res.write(chunk.subarray(0, Math.min(chunk.length, length - sent)))) await new Promise((r) => res.once("drain", r).once("close", r));
  }
  res.end();
}

describe("an S3 answer that fails its checks", () => {
  for (const [what, answer, message] of [
    ["another version", { versionId: "v2" }, /sent version v2, not v1/],
    ["another range", { contentRange: `bytes 0-${READ - 1}/${SIZE + 1}` }, /sent bytes 0-\d+\/\d+, not/],
  ] as const) {
    it(`${what}: 502, and the body is destroyed`, async () => {
      wrong = {};
      const client = makeS3Client({ endpoint, accessKeyId: "k", secretAccessKey: "s" });
      try {
        const source = await new S3SourceCatalog({ client, bucket: "b", prefix: "" }).open("x", undefined);
        wrong = answer;
        await expect(source.read(0, READ)).rejects.toMatchObject({ status: 502, message: expect.stringMatching(message) });
        const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("the body was left open")), 2000));
        await Promise.race([cutShort, timeout]);
      } finally {
        client.destroy();
      }
    });
  }
});

describe("the opening read", () => {
  it("is one ranged GET of TESSERA_S3_FIRST_READ_KB, its bytes kept with the source; 0 is refused", async () => {
    wrong = {};
    vi.stubEnv("AWS_ACCESS_KEY_ID", "k");
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", "s");
    const env = { TESSERA_DECODER_SECRET: "s", TESSERA_SOURCE: "s3", TESSERA_S3_ENDPOINT: endpoint, TESSERA_S3_BUCKET: "b" };
    const { catalog } = readConfig({ ...env, TESSERA_S3_FIRST_READ_KB: "128" });
    ranges.length = 0;
    const source = await catalog.open("x", undefined);
    expect(source.firstBytes?.length).toBe(128 * 1024);
    expect(ranges).toEqual(["bytes=0-131071"]);
    expect(() => readConfig({ ...env, TESSERA_S3_FIRST_READ_KB: "0" })).toThrow(/TESSERA_S3_FIRST_READ_KB/);
    vi.unstubAllEnvs();
  });
});

describe("a store failure, as the client sees it", () => {
  const bucket = "tessera-private-bucket";
  const prefix = "sources/";
  for (const [what, failing, message, detail] of [
    ["a refused read", { refuse: 403 }, "the image store failed", `S3 GetObject failed for s3://${bucket}/${prefix}x.tif: 403 AccessDenied`],
    ["a broken catalog entry", { entry: "{" }, "the source's catalog entry is not JSON", `catalog entry s3://${bucket}/${prefix}x.tessera.json is not JSON`],
  ] as const) {
    it(`${what}: a 502 that names neither bucket nor key; the decoder's log does, by the request id`, async () => {
      const client = makeS3Client({ endpoint, accessKeyId: "k", secretAccessKey: "s" });
      const d = await startDecoder(new S3SourceCatalog({ client, bucket, prefix }));
      try {
        store = failing;
        const res = await signedGet(d, DECODER.info("x"));
        const text = await res.text();
        expect(res.status).toBe(502);
        expect(JSON.parse(text).message).toBe(message);
        for (const internal of [bucket, prefix, "s3://"]) expect(text).not.toContain(internal);
        expect(refusalLog(d, res.headers.get("x-request-id"))).toMatchObject({ level: "error", status: 502, message, detail });
      } finally {
        store = {};
        await d.close();
        client.destroy();
      }
    });
  }
});
