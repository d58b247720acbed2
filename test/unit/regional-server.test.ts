// The decoder service end to end over HTTP: a real server on port 0 over the local catalog.

import { readdirSync, readlinkSync, realpathSync } from "node:fs";
import { request } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DecodedBlockCache } from "../../regional/cog/block-cache";
import { LocalCatalog } from "../../regional/source/local";
import type { SourceCatalog } from "../../regional/source/source";
import {
  DECODER,
  GRANT_HEADER,
  GRANTED_PARTITION_HEADER,
  limitHeaders,
  MAX_DEADLINE_MS,
  REQUEST_ID_HEADER,
  SIGNED_HEADERS_REFUSED_HEADER,
  signedHeaders,
  signRequest,
  TIMEOUT_HEADER,
  VERSION_HEADER,
  type SourceInfo,
} from "../../shared/protocol";
import {
  decodeRgb,
  fixtureDir,
  meanAbsDiff,
  metricValue,
  RecordingCatalog,
  referenceRgb,
  signedGet,
  startDecoder,
  type Decoder,
} from "./regional-helpers";
import { histogram, longestSince } from "../support/metrics";

let fixtures: Awaited<ReturnType<typeof fixtureDir>>;
let decoder: Decoder;
let catalog: RecordingCatalog;
const versions: Record<string, string> = {};

beforeAll(async () => {
  fixtures = await fixtureDir();
  catalog = new RecordingCatalog(new LocalCatalog(fixtures.dir));
  decoder = await startDecoder(catalog);
  for (const id of ["jpeg", "deflate"]) {
    const info = (await (await signedGet(decoder, DECODER.info(id))).json()) as SourceInfo;
    versions[id] = info.version;
  }
});

afterAll(async () => {
  await decoder?.close();
  await fixtures?.remove();
});

const imagePath = (id: string, canonical: string) => DECODER.image(id, canonical, versions[id]);

describe("GET /health", () => {
  it("answers without a signature and reports capacity", async () => {
    const res = await fetch(decoder.url + DECODER.health);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, capacity: 3 });
  });
});

describe("GET /metrics", () => {
  const token = "metrics-test-token-4f1c";
  let guarded: Decoder;
  beforeAll(async () => {
    guarded = await startDecoder(catalog, 3, { metricsToken: token });
  });
  afterAll(() => guarded?.close());
  const scrape = (d: Decoder, authorization?: string) => fetch(`${d.url}/metrics`, { headers: authorization === undefined ? {} : { authorization } });

  it("with a token set, answers 401 with a Bearer challenge and no metric without it (nor a wrong, partial or other-scheme one)", async () => {
    for (const authorization of [undefined, "", "Bearer", "Bearer wrong", `Bearer ${token.slice(0, -1)}`, `Bearer ${token}x`, token, `Basic ${token}`]) {
      const res = await scrape(guarded, authorization);
      expect(res.status, authorization).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(await res.text()).not.toContain("tessera_decoder_");
    }
  });

  it("with a token set, answers its bearer, the scheme in any case, and counts the refusals it answered", async () => {
    await scrape(guarded, "Bearer wrong");
    for (const authorization of [`Bearer ${token}`, `bearer ${token}`, `BEARER  ${token}`]) {
      const res = await scrape(guarded, authorization);
      expect(res.status, authorization).toBe(200);
      expect(await res.text()).toMatch(/^tessera_decoder_requests_total\{route="metrics",status="401"\} [1-9]/m);
    }
  });

  it("with a token set, leaves /health open to the probes", async () => {
    const res = await fetch(guarded.url + DECODER.health);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, capacity: 3 });
  });

  it("keeps an event-loop stall on the page however many scrapers read it, and goes on sampling", async () => {
    const delays = async () => histogram(await (await scrape(decoder)).text(), "tessera_decoder_eventloop_delay_seconds");
    const before = await delays();
    const end = performance.now() + 200;
    while (performance.now() < end); // the decoder's loop (this process's) held 200 ms
    await new Promise((r) => setTimeout(r, 30));
    const scrapes = [];
    for (let i = 0; i < 4; i++) {
      scrapes.push(await delays());
      await new Promise((r) => setTimeout(r, 30));
    }
    for (const after of scrapes) expect(longestSince(before, after)).toBeGreaterThan(0.1);
    const counts = scrapes.map((s) => s.at(-1)!.count);
    expect(counts[3]).toBeGreaterThan(counts[0]);
    // No figure that a scrape resets is left on the page.
    expect(await (await scrape(decoder)).text()).not.toMatch(/eventloop_lag/);
  });

  it("without a token, is open to anyone", async () => {
    const res = await scrape(decoder);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^tessera_decoder_requests_total\{/m);
  });
});

describe("GET /v1/info", () => {
  it("describes the pinned source", async () => {
    const res = await signedGet(decoder, DECODER.info("jpeg"));
    expect(res.status).toBe(200);
    const info = (await res.json()) as SourceInfo;
    expect(info).toMatchObject({ id: "jpeg", width: 1000, height: 1000, tileWidth: 256, tileHeight: 256 });
    expect(info.levels).toEqual([
      { width: 1000, height: 1000 },
      { width: 500, height: 500 },
      { width: 250, height: 250 },
    ]);
    expect(info.bytes).toBeGreaterThan(0);
    expect(info.version).toMatch(/^\d+-[\d.]+$/);
    expect(res.headers.get(VERSION_HEADER)).toBe(info.version);
  });

  it("accepts the current version explicitly and 404s a version that is gone", async () => {
    expect((await signedGet(decoder, `${DECODER.info("jpeg")}?version=${versions.jpeg}`)).status).toBe(200);
    const res = await signedGet(decoder, `${DECODER.info("jpeg")}?version=123-456`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "version_gone", message: 'source "jpeg" version no longer available', requestId: expect.any(String) });
  });
});

describe("GET /v1/image", () => {
  // The pattern is a grid of 100×100 px squares; most regions straddle square edges, so a
  // misplaced window shows up as a large difference.
  const cases = [
    { id: "deflate", rect: { x: 100, y: 100, w: 100, h: 100 }, tolerance: 2 },
    { id: "deflate", rect: { x: 150, y: 250, w: 200, h: 100 }, tolerance: 3 },
    { id: "jpeg", rect: { x: 100, y: 100, w: 100, h: 100 }, tolerance: 4 },
    { id: "jpeg", rect: { x: 150, y: 250, w: 200, h: 100 }, tolerance: 6 },
    { id: "jpeg", rect: { x: 0, y: 0, w: 256, h: 300 }, tolerance: 6 }, // crosses a tile edge
    { id: "jpeg", rect: { x: 900, y: 850, w: 100, h: 150 }, tolerance: 6 }, // last, partial tiles
  ];
  for (const { id, rect, tolerance } of cases) {
    it(`renders ${id} region ${rect.x},${rect.y},${rect.w},${rect.h} at full resolution`, async () => {
      const res = await signedGet(decoder, imagePath(id, `${rect.x},${rect.y},${rect.w},${rect.h}/max/0/default.jpg`));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/jpeg");
      expect(res.headers.get(VERSION_HEADER)).toBe(versions[id]);
      const body = Buffer.from(await res.arrayBuffer());
      expect(Number(res.headers.get("content-length"))).toBe(body.length);
      const got = await decodeRgb(body);
      expect([got.width, got.height]).toEqual([rect.w, rect.h]);
      expect(meanAbsDiff(got, await referenceRgb(rect))).toBeLessThan(tolerance);
    });
  }

  it("a misplaced window does not pass (the comparison can fail)", async () => {
    const res = await signedGet(decoder, imagePath("deflate", "150,250,200,100/max/0/default.jpg"));
    const got = await decodeRgb(Buffer.from(await res.arrayBuffer()));
    expect(meanAbsDiff(got, await referenceRgb({ x: 170, y: 250, w: 200, h: 100 }))).toBeGreaterThan(10);
  });

  it("reads the smallest overview that still covers the output size", async () => {
    // Its own decoder with no block cache, so every request decodes the blocks it needs.
    const d = await startDecoder(new LocalCatalog(fixtures.dir), 3, { blockCache: new DecodedBlockCache(0) });
    try {
      const blocksDecoded = async (canonical: string) => {
        const before = await metricValue(d, "tessera_decoder_blocks_decoded_total");
        const res = await signedGet(d, imagePath("deflate", canonical));
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        return (await metricValue(d, "tessera_decoder_blocks_decoded_total")) - before;
      };
      expect(await blocksDecoded("full/max/0/default.jpg")).toBe(16); // 4×4 tiles of 1000×1000
      expect(await blocksDecoded("full/500,500/0/default.jpg")).toBe(4); // the 500 overview, 2×2 tiles
      expect(await blocksDecoded("full/250,250/0/default.jpg")).toBe(1); // the 250 overview, one tile
      expect(await blocksDecoded("full/251,251/0/default.jpg")).toBe(4); // never upsample the 250 one
      expect(await blocksDecoded("0,0,200,200/100,100/0/default.jpg")).toBe(1); // 500 overview, 100×100 of it
    } finally {
      await d.close();
    }
  });
  for (const [size, expected] of [
    ["250,250", 250],
    ["500,500", 500],
    ["200,200", 200],
  ] as const) {
    it(`scales full/${size} from an overview to exactly ${expected}x${expected}`, async () => {
      const res = await signedGet(decoder, imagePath("deflate", `full/${size}/0/default.jpg`));
      expect(res.status).toBe(200);
      const got = await decodeRgb(Buffer.from(await res.arrayBuffer()));
      expect([got.width, got.height]).toEqual([expected, expected]);
      const want = await referenceRgb({ x: 0, y: 0, w: 1000, h: 1000 }, { width: expected, height: expected });
      expect(meanAbsDiff(got, want)).toBeLessThan(12);
    });
  }

  it("stretches to exactly the requested non-proportional size", async () => {
    const res = await signedGet(decoder, imagePath("jpeg", "0,0,400,200/100,150/0/color.jpg"));
    expect(res.status).toBe(200);
    const got = await decodeRgb(Buffer.from(await res.arrayBuffer()));
    expect([got.width, got.height]).toEqual([100, 150]);
  });

  it("answers 400 for a malformed request, naming the part", async () => {
    for (const canonical of ["full/max/0/default.png.x", "0,0,10/max/0/default.jpg", "full/0,/0/default.jpg", "full/max/abc/default.jpg"]) {
      const res = await signedGet(decoder, imagePath("jpeg", canonical));
      expect(res.status, canonical).toBe(400);
      const body = (await res.json()) as { error: string; message: string };
      expect(body.error).toBe("bad_request");
    }
    const res = await signedGet(decoder, imagePath("jpeg", "2000,0,10,10/max/0/default.jpg"));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain("outside");
  });

  it("answers jp2 as a JP2 file (test/unit/jp2.test.ts has its boxes and pixels)", async () => {
    const res = await signedGet(decoder, imagePath("jpeg", "full/max/0/default.jp2"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jp2");
    expect(Buffer.from(await res.arrayBuffer()).subarray(0, 12).toString("hex")).toBe("0000000c6a5020200d0a870a");
  });
});

describe("the opened source", () => {
  it("stays open after a request the encoder would refuse: 400, and repeating it opens nothing", async () => {
    await signedGet(decoder, imagePath("jpeg", "full/10,/0/default.jpg")); // opened and cached
    const opens = catalog.opens.get("jpeg");
    for (let i = 0; i < 3; i++) {
      // 65,501 pixels wide: more than the JPEG encoder writes (and, rotated, a wider canvas).
      for (const canonical of ["0,0,1000,1/%5E65501,66/0/default.jpg", "full/%5E50000,50000/45/default.jpg"]) {
        const res = await signedGet(decoder, imagePath("jpeg", canonical));
        expect(res.status, canonical).toBe(400);
        expect(((await res.json()) as { message: string }).message).toContain("exceeds 65500 pixels a side");
      }
    }
    expect((await signedGet(decoder, imagePath("jpeg", "full/10,/0/default.jpg"))).status).toBe(200);
    expect(catalog.opens.get("jpeg")).toBe(opens);
  });
});

describe("GET /v1/file", () => {
  it("closes the file when the client is gone before the stream starts", async () => {
    const local = new LocalCatalog(fixtures.dir);
    let opening!: () => void;
    let opened!: () => void;
    const openStarted = new Promise<void>((r) => (opening = r));
    const openDone = new Promise<void>((r) => (opened = r));
    // A store whose open completes although the request was cancelled meanwhile.
    const late: SourceCatalog = {
      description: "late open",
      async open(id, version, signal) {
        opening();
        await new Promise((r) => signal!.addEventListener("abort", r, { once: true }));
        const source = await local.open(id, version);
        opened();
        return source;
      },
      openKey: (key) => local.openKey(key),
    };
    const d = await startDecoder(late);
    const file = realpathSync(path.join(fixtures.dir, "deflate.tif"));
    const before = openDescriptors(file); // the other decoder's cached snapshot
    try {
      const target = DECODER.file("deflate", versions.deflate);
      const client = new AbortController();
      const res = fetch(d.url + target, { headers: await signedHeaders(d.secret, "GET", target), signal: client.signal });
      await openStarted;
      client.abort();
      await expect(res).rejects.toThrow();
      await openDone;
      await expect.poll(() => openDescriptors(file)).toBe(before);
    } finally {
      await d.close();
    }
  });
});

/** This process's open file descriptors on `file`. */
function openDescriptors(file: string): number {
  const fds = readdirSync("/proc/self/fd");
  return fds.filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === file;
    } catch {
      return false; // closed while we looked
    }
  }).length;
}

describe("authentication", () => {
  it("answers 401 without a signature", async () => {
    const res = await signedGet(decoder, DECODER.info("jpeg"), null);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toBe("unauthorized");
  });

  it("answers 401 for a bad, foreign or misapplied signature", async () => {
    const path = DECODER.info("jpeg");
    const good = await signRequest(decoder.secret, "GET", path);
    const [expires, mac] = good.split(".");
    const flipped = `${expires}.${mac.slice(0, -1)}${mac.endsWith("0") ? "1" : "0"}`;
    const foreign = await signRequest("another-secret", "GET", path);
    const otherPath = await signRequest(decoder.secret, "GET", DECODER.info("deflate"));
    const expired = await signRequest(decoder.secret, "GET", path, Date.now() - 120_000);
    for (const signature of [flipped, foreign, otherPath, expired, "garbage"]) {
      expect((await signedGet(decoder, path, signature)).status, signature).toBe(401);
    }
    // The signature covers the query too: changing the pinned version invalidates it.
    const img = imagePath("jpeg", "full/100,100/0/default.jpg");
    const sig = await signRequest(decoder.secret, "GET", img);
    const res = await fetch(decoder.url + img.replace(/version=[^&]+/, "version=1-2"), {
      headers: { "x-tessera-signature": sig },
    });
    expect(res.status).toBe(401);
  });

  it("answers 401 for a signature expiring later than one made now would", async () => {
    const path = DECODER.info("jpeg");
    // Correctly signed, by a clock an hour or 40 s ahead: replayable that long were it taken.
    const signedAhead = async (ms: number) => fetch(decoder.url + path, { headers: await signedHeaders(decoder.secret, "GET", path, {}, Date.now() + ms) });
    for (const ahead of [3_600_000, 40_000]) {
      const res = await signedAhead(ahead);
      expect(res.status, String(ahead)).toBe(401);
      expect(((await res.json()) as { message: string }).message).toMatch(/expires too far ahead/);
    }
    // A signer's clock a few seconds ahead is allowed for.
    expect((await signedAhead(5_000)).status).toBe(200);
  });

  it("answers 401 to a signed request sent again, for as long as its signature is current", async () => {
    const path = DECODER.info("jpeg");
    const headers = await signedHeaders(decoder.secret, "GET", path);
    expect((await fetch(decoder.url + path, { headers })).status).toBe(200);
    const again = await fetch(decoder.url + path, { headers });
    expect(again.status).toBe(401);
    expect(((await again.json()) as { message: string }).message).toBe(`replayed edge request: request id ${headers[REQUEST_ID_HEADER]} was taken already`);
    // The same call signed afresh is a new request.
    expect((await signedGet(decoder, path)).status).toBe(200);
  });

  it("answers 401 to a signed request without a request id", async () => {
    const path = DECODER.info("jpeg");
    const res = await signedGet(decoder, path, await signRequest(decoder.secret, "GET", path));
    expect(res.status).toBe(401);
    expect(((await res.json()) as { message: string }).message).toMatch(/must carry its own x-tessera-request-id/);
  });

  it("takes one signed invalidation once, however often it is sent", async () => {
    const path = DECODER.invalidate("jpeg");
    const headers = await signedHeaders(decoder.secret, "POST", path);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(decoder.url + path, { method: "POST", headers })).status);
    expect(statuses).toEqual([200, 401, 401]);
  });

  it("answers 401 for granted limits that were not signed as sent", async () => {
    const path = imagePath("jpeg", "full/100,100/0/default.jpg");
    const limits = { timeoutMs: "5000", grantBytes: "1000000", requestId: "limits-as-sent" };
    const signature = await signRequest(decoder.secret, "GET", path, Date.now(), limits);
    const send = (headers: Record<string, string>) =>
      fetch(decoder.url + path, { headers: { "x-tessera-signature": signature, ...headers } });
    expect((await send(limitHeaders(limits))).status).toBe(200);
    expect((await send(limitHeaders({ ...limits, grantBytes: "9000000000" }))).status).toBe(401);
    expect((await send(limitHeaders({ ...limits, timeoutMs: "600000" }))).status).toBe(401);
    expect((await send(limitHeaders({ ...limits, grantBytes: null }))).status).toBe(401);
    // A limit added to a request signed without one.
    const plain = await signRequest(decoder.secret, "GET", path);
    const res = await fetch(decoder.url + path, { headers: { "x-tessera-signature": plain, [GRANT_HEADER]: "1" } });
    expect(res.status).toBe(401);
  });

  it("marks its refusals of the signed headers, never a refusal of the request itself", async () => {
    const path = imagePath("jpeg", "full/100,100/0/default.jpg");
    const marked = (res: Response) => [res.status, res.headers.get(SIGNED_HEADERS_REFUSED_HEADER)];
    // Limits signed as sent that this decoder cannot read: what an edge of another version might sign.
    const unreadable: Record<string, string>[] = [
      { [TIMEOUT_HEADER]: "soon" },
      { [TIMEOUT_HEADER]: String(MAX_DEADLINE_MS + 1) },
      { [GRANT_HEADER]: "lots" },
      { [GRANT_HEADER]: "1000", [GRANTED_PARTITION_HEADER]: "huge" },
    ];
    for (const limits of unreadable) {
      expect(marked(await signedGet(decoder, path, undefined, limits)), JSON.stringify(limits)).toEqual([400, "1"]);
    }
    expect(marked(await signedGet(decoder, path, null))).toEqual([401, "1"]);
    const headers = await signedHeaders(decoder.secret, "GET", path);
    await fetch(decoder.url + path, { headers });
    expect(marked(await fetch(decoder.url + path, { headers }))).toEqual([401, "1"]); // a replay
    expect(marked(await signedGet(decoder, imagePath("jpeg", "2000,0,10,10/max/0/default.jpg")))).toEqual([400, null]);
    expect(marked(await signedGet(decoder, DECODER.info("no-such-source")))).toEqual([404, null]);
  });

  it("checks the signature before anything else", async () => {
    expect((await signedGet(decoder, DECODER.info("no-such-source"), null)).status).toBe(401);
    expect((await signedGet(decoder, "/v1/nothing-here", null)).status).toBe(401);
  });
});

describe("unknown sources and routes", () => {
  it("answers 404 for unknown ids and for ids that try to leave the directory", async () => {
    // ("." and ".." as a whole segment are normalized away by fetch; rawGet below sends them.)
    for (const id of ["no-such-source", "../etc/passwd", "../jpeg", "...", ".hidden", "a/b", "jpeg.tif\u0000", "jpeg.tif"]) {
      const res = await signedGet(decoder, DECODER.info(id));
      expect(res.status, JSON.stringify(id)).toBe(404);
      expect(((await res.json()) as { error: string }).error).toBe("not_found");
    }
    for (const raw of ["/v1/info/..", "/v1/info/../../etc/passwd", "/v1/image/../full/max/0/default.jpg?version=1"]) {
      expect(await rawGet(raw), raw).toBe(404);
    }
    expect((await signedGet(decoder, DECODER.image("../jpeg", "full/max/0/default.jpg", "1"))).status).toBe(404);
  });

  it("answers 404 for an unknown route and 400 for bad percent-encoding", async () => {
    expect((await signedGet(decoder, "/v1/frobnicate/jpeg")).status).toBe(404);
    expect((await fetch(decoder.url + "/nope")).status).toBe(404);
    expect((await signedGet(decoder, "/v1/info/%E0%A4%A")).status).toBe(400);
  });

  it("logs one structured line per request", async () => {
    const before = decoder.logs.length;
    await fetch(decoder.url + DECODER.health);
    const line = decoder.logs.slice(before).find((r) => r.msg === "request");
    expect(line).toMatchObject({ level: "info", method: "GET", path: "/health", status: 200 });
    expect(typeof line?.ms).toBe("number");
  });
});

/** A signed GET of `path` exactly as written (no URL normalization of dot segments). */
async function rawGet(path: string): Promise<number> {
  const headers = await signedHeaders(decoder.secret, "GET", path);
  return new Promise((resolve, reject) => {
    const req = request(decoder.url + "/", { path, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}
