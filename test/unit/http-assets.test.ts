// HTTP(S) mosaic assets against a real local web server: bytes pinned to one ETag, every way a
// server can answer another version or range, redirects, timeouts, aborts, the connection bound,
// and labels that never show credentials or signatures.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { HttpError } from "../../shared/errors";
import { readAssetConfig } from "../../regional/source/access-policy";
import { AssetSources } from "../../regional/source/assets";
import { DEFAULT_OPEN_BYTES, HttpReader } from "../../regional/source/http";
import type { Source } from "../../regional/source/source";
import { startAssetServer, type AssetServer } from "../support/asset-server";
import { failure } from "../support/failure";

const SIZE = 100_000;
const TIMEOUT_MS = 300;

/** Bytes that differ at every offset that matters, so a misplaced range shows. */
function contentOf(seed: number): Uint8Array {
  const bytes = new Uint8Array(SIZE);
  for (let i = 0; i < SIZE; i++) bytes[i] = (i * 31 + (i >> 8) * 7 + seed) & 0xff;
  return bytes;
}

let dir: string;
let server: AssetServer;
let assets: AssetSources;
let base: string;

function sourcesFor(env: NodeJS.ProcessEnv): AssetSources {
  return new AssetSources(readAssetConfig(env), async () => {
    throw new Error("no store key in these tests");
  });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-http-assets-"));
  server = await startAssetServer(dir);
  base = `http://127.0.0.1:${server.port}`;
});

afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await writeFile(path.join(dir, "a.tif"), contentOf(1));
  server.misbehaviour = undefined;
  server.delayMs = 0;
  server.requests.length = 0;
  assets = sourcesFor({
    TESSERA_ASSET_HOSTS: `127.0.0.1:${server.port},localhost:${server.port}`,
    TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8,::1/128",
    TESSERA_ASSET_TIMEOUT_MS: String(TIMEOUT_MS),
  });
});

afterEach(async () => {
  await assets.close();
});

describe("an allowed host at an allowed address", () => {
  it("reads the right bytes, inside and past the opening read, each range pinned with If-Match", async () => {
    const want = contentOf(1);
    const source = await assets.open(`${base}/a.tif`);
    expect(source.size).toBe(SIZE);
    expect(source.label).toBe(`${base}/a.tif`);
    const opening = server.requests[0].headers;
    expect(opening.range).toBe(`bytes=0-${DEFAULT_OPEN_BYTES - 1}`);
    expect(source.version).toMatch(/^"[0-9a-f]+"$/);

    for (const [offset, length] of [[0, 8], [100, 4000], [DEFAULT_OPEN_BYTES - 4, 8], [50_000, 20_000], [SIZE - 1, 1], [7, 0]]) {
      expect(await source.read(offset, length), `${offset}+${length}`).toEqual(want.subarray(offset, offset + length));
    }
    const reads = server.requests.slice(1);
    expect(reads).toHaveLength(3); // the reads inside the first 16 KiB came from memory
    for (const { headers } of reads) expect(headers["if-match"]).toBe(source.version);
  });

  it("connects through a host name to the address its lookup checked", async () => {
    const source = await assets.open(`http://localhost:${server.port}/a.tif`);
    expect(await source.read(60_000, 10)).toEqual(contentOf(1).subarray(60_000, 60_010));
  });

  it("refuses a read outside the object before any request", async () => {
    const source = await assets.open(`${base}/a.tif`);
    const count = server.requests.length;
    expect((await failure(source.read(SIZE - 4, 8))).status).toBe(502);
    expect(server.requests).toHaveLength(count);
  });
});

describe("RequireValidator", () => {
  it("refuses an object with a weak ETag or none", async () => {
    for (const mode of ["weak-etag", "no-etag"] as const) {
      server.misbehaviour = mode;
      const err = await failure(assets.open(`${base}/a.tif`));
      expect(err.status, mode).toBe(502);
      const etag = mode === "weak-etag" ? "only a weak ETag" : "no ETag";
      expect(err.message, mode).toMatch(new RegExp(`^a mosaic asset has ${etag}, `));
      expect(err.detail, mode).toBe(`${base}/a.tif: ${err.message}`);
    }
  });

  it("serves one without a strong ETag only when told it never changes", async () => {
    const reader = new HttpReader({ connections: 2 });
    try {
      server.misbehaviour = "no-etag";
      const source = await reader.open(new URL(`${base}/a.tif`), "a", { assumeImmutable: true });
      expect(await source.read(40_000, 5)).toEqual(contentOf(1).subarray(40_000, 40_005));
      expect(server.requests.at(-1)?.headers["if-match"]).toBeUndefined();
    } finally {
      await reader.close();
    }
  });

  it("fails with source changed, never mixed bytes, when the file changes between reads", async () => {
    const source = await assets.open(`${base}/a.tif`);
    expect(await source.read(30_000, 100)).toEqual(contentOf(1).subarray(30_000, 30_100));
    await writeFile(path.join(dir, "a.tif"), contentOf(2));
    const err = await failure(source.read(40_000, 100));
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/^source changed: a mosaic asset version "[0-9a-f]+" is gone$/);
    expect(err.detail).toBe(`${base}/a.tif: ${err.message}`);
  });

  it("refuses the new version's bytes from a server that ignores If-Match", async () => {
    const source = await assets.open(`${base}/a.tif`);
    await writeFile(path.join(dir, "a.tif"), contentOf(2));
    server.misbehaviour = "ignore-if-match";
    const err = await failure(source.read(40_000, 100));
    expect(err.status).toBe(502);
    expect(err.message).toContain("source changed: a mosaic asset sent ETag");
  });

  it("refuses a server that ignores Range, at the open and at a read", async () => {
    server.misbehaviour = "ignore-range";
    const atOpen = await failure(assets.open(`${base}/a.tif`));
    expect(atOpen.status).toBe(502);
    expect(atOpen).toMatchObject({ message: "a mosaic asset does not answer byte ranges (200, not 206)", detail: `${base}/a.tif: ${atOpen.message}` });

    server.misbehaviour = undefined;
    const source = await assets.open(`${base}/a.tif`);
    server.misbehaviour = "ignore-range";
    const atRead = await failure(source.read(40_000, 100));
    expect(atRead.message).toBe("source changed: a mosaic asset answered 200, not 206");
  });

  it("refuses a range answered with another Content-Range or a body of another length", async () => {
    const source = await assets.open(`${base}/a.tif`);
    // The file grew: the server answers the range asked, but of another total size.
    await writeFile(path.join(dir, "a.tif"), Buffer.concat([contentOf(1), Buffer.from("more")]));
    server.misbehaviour = "ignore-if-match";
    expect((await failure(source.read(40_000, 100))).message).toContain("sent Content-Range bytes 40000-40099/100004, not bytes 40000-40099/100000");
    // Shrunk: the end of the range is no longer there.
    await writeFile(path.join(dir, "a.tif"), contentOf(1).subarray(0, 40_050));
    expect((await failure(source.read(40_000, 100))).message).toContain("source changed");
  });
});

describe("redirects", () => {
  it("are refused at the open and at a read, and the target gets no request", async () => {
    const target = await startAssetServer(dir);
    try {
      server.misbehaviour = "redirect";
      server.redirectTo = `http://127.0.0.1:${target.port}/a.tif`;
      const atOpen = await failure(assets.open(`${base}/a.tif`));
      expect(atOpen.status).toBe(502);
      expect(atOpen.message).toContain("a mosaic asset answered a redirect (302), which is not followed");

      server.misbehaviour = undefined;
      const source = await assets.open(`${base}/a.tif`);
      server.misbehaviour = "redirect";
      expect((await failure(source.read(40_000, 10))).message).toContain("answered a redirect (302)");
      expect(target.connections).toBe(0);
      expect(target.requests).toHaveLength(0);
    } finally {
      await target.close();
    }
  });
});

describe("timeouts, aborts and the connection bound", () => {
  it("answers 504 (the log naming the asset) when a server stalls before its headers or inside its body", async () => {
    for (const mode of ["stall", "stall-body"] as const) {
      server.misbehaviour = undefined;
      const source = await assets.open(`${base}/a.tif`);
      server.misbehaviour = mode;
      const started = performance.now();
      const err = await failure(source.read(40_000, 20_000));
      expect(err.status, mode).toBe(504);
      expect(err.message, mode).toBe("a mosaic asset did not answer in time");
      expect(err.detail, mode).toMatch(new RegExp(`^${base}/a\\.tif: a mosaic asset did not answer in time \\(UND_ERR_\\w+_TIMEOUT\\)$`));
      // undici checks its timers every half second at most.
      expect(performance.now() - started, mode).toBeLessThan(TIMEOUT_MS + 1500);
    }
    server.misbehaviour = "stall";
    expect((await failure(assets.open(`${base}/a.tif`))).status).toBe(504);
  });

  it("stops a read promptly when its signal aborts, with the signal's reason", async () => {
    const source = await assets.open(`${base}/a.tif`);
    server.misbehaviour = "stall";
    const controller = new AbortController();
    const reason = new HttpError("deadline", "deadline exceeded");
    setTimeout(() => controller.abort(reason), 50);
    const started = performance.now();
    await expect(source.read(40_000, 100, controller.signal)).rejects.toBe(reason);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("stops a read waiting for a connection when its signal aborts", async () => {
    const one = sourcesFor({
      TESSERA_ASSET_HOSTS: `127.0.0.1:${server.port}`,
      TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8",
      TESSERA_ASSET_CONNECTIONS: "1",
      TESSERA_ASSET_TIMEOUT_MS: "5000",
    });
    try {
      const source = await one.open(`${base}/a.tif`);
      server.misbehaviour = "stall";
      const holding = new AbortController();
      const holder = source.read(40_000, 100, holding.signal).catch(() => undefined); // takes the one connection
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error("client left")), 50);
      const started = performance.now();
      await expect(source.read(50_000, 100, controller.signal)).rejects.toThrow("client left");
      expect(performance.now() - started).toBeLessThan(1000);
      expect(server.requests).toHaveLength(2); // the open and the holder's read
      holding.abort();
      await holder;
    } finally {
      await one.close();
    }
  });

  it("never has more requests at the server than its connection limit under 50 concurrent reads", async () => {
    const four = sourcesFor({
      TESSERA_ASSET_HOSTS: `127.0.0.1:${server.port},localhost:${server.port}`,
      TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8,::1/128",
      TESSERA_ASSET_CONNECTIONS: "4",
    });
    try {
      // Two origins, so a per-origin bound alone would allow twice as many.
      const sources: Source[] = [await four.open(`${base}/a.tif`), await four.open(`http://localhost:${server.port}/a.tif`)];
      server.delayMs = 20;
      const want = contentOf(1);
      const offsets = Array.from({ length: 50 }, (_, i) => 20_000 + i * 1000);
      const got = await Promise.all(offsets.map((o, i) => sources[i % 2].read(o, 500)));
      got.forEach((bytes, i) => expect(bytes).toEqual(want.subarray(offsets[i], offsets[i] + 500)));
      expect(server.maxConcurrent).toBeLessThanOrEqual(4);
      expect(server.maxConcurrent).toBeGreaterThan(1);
    } finally {
      await four.close();
    }
  });
});

describe("labels in failures", () => {
  /** Neither the answer nor the log may hold a URL's credentials, query or fragment. */
  const secret = (e: HttpError) => {
    for (const text of [e.message, e.detail ?? ""]) {
      expect(text).not.toContain("pw");
      expect(text).not.toContain("sig=");
      expect(text).not.toContain("#");
    }
  };

  it("show neither the query nor the fragment when an open or a read fails", async () => {
    const url = `${base}/a.tif?sig=pw123#frag`;
    server.misbehaviour = "weak-etag";
    const weak = await failure(assets.open(url));
    expect(weak.detail).toContain(`${base}/a.tif: a mosaic asset has only a weak ETag`);
    secret(weak);

    server.misbehaviour = undefined;
    const source = await assets.open(url);
    expect(source.label).toBe(`${base}/a.tif`);
    await writeFile(path.join(dir, "a.tif"), contentOf(3));
    secret(await failure(source.read(40_000, 10)));

    server.misbehaviour = "stall";
    secret(await failure(assets.open(url)));
    server.misbehaviour = undefined;
    const missing = await failure(assets.open(`${base}/missing.tif?sig=pw#x`));
    expect(missing).toMatchObject({ message: "a mosaic asset answered 404", detail: `${base}/missing.tif: a mosaic asset answered 404` });
  });

  it("show no user name or password in a refusal, by the policy or by the address", async () => {
    const byHost = await failure(assets.open("https://h.org/a.tif?sig=pw#x"));
    expect(byHost.detail).toBe("https://h.org/a.tif: a mosaic asset is refused by the access policy: host h.org is not allowed");
    const unknownWithUser = await failure(assets.open("https://user:pw@h.org/a.tif?sig=abc#x"));
    expect(unknownWithUser.detail).toBe("https://h.org/a.tif: a mosaic asset is refused by the access policy: a URL may not carry a user name or password");
    const byUserinfo = await failure(assets.open(`http://user:pw@127.0.0.1:${server.port}/a.tif?sig=abc#x`));
    expect(byUserinfo.detail).toBe(`${base}/a.tif: a mosaic asset is refused by the access policy: a URL may not carry a user name or password`);
    const strict = sourcesFor({ TESSERA_ASSET_HOSTS: `localhost:${server.port}` });
    try {
      const byAddress = await failure(strict.open(`http://localhost:${server.port}/a.tif?sig=abc#x`));
      expect(byAddress.detail).toMatch(/^http:\/\/localhost:\d+\/a\.tif: a mosaic asset is refused by the access policy: host localhost resolves to/);
      for (const err of [byHost, unknownWithUser, byUserinfo, byAddress]) secret(err);
    } finally {
      await strict.close();
    }
    expect(server.requests).toHaveLength(0);
  });

  it("name a connection failure by the label, in the log alone", async () => {
    const closed = await startAssetServer(dir);
    const port = closed.port;
    await closed.close();
    const refused = sourcesFor({ TESSERA_ASSET_HOSTS: `127.0.0.1:${port}`, TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8" });
    try {
      const err = await failure(refused.open(`http://127.0.0.1:${port}/a.tif?sig=pw#x`));
      expect(err.status).toBe(502);
      expect(err).toMatchObject({ message: "a mosaic asset could not be read", detail: `http://127.0.0.1:${port}/a.tif: a mosaic asset could not be read: ECONNREFUSED` });
    } finally {
      await refused.close();
    }
  });
});
