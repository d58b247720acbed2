// `tessera access` and `tessera publish --access` against a fake store and a fake edge: the
// entry's access written with its pin, pins and policy kept, the edge invalidated as `pin` does,
// a restriction written before a publish's upload (so the new version is never open), unknown
// ids refused, and every usage error exit 2 before the store or the edge is asked.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SAMPLE, tessera } from "./cli-helpers";

/** The store's objects by key (bucket "b"); every write, in order. */
let objects: Map<string, string>;
let writes: { key: string; body: string }[];
/** What the edge was asked. */
let invalidated: { url?: string; authorization?: string }[];
let store: Server;
let edge: Server;
let env: Record<string, string>;

const ENTRY = { pin: "v1", policy: "AssumeImmutable", pins: [{ version: "v1", at: "2026-11-30T20:51:28.840Z" }] };

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  store = createServer(async (req, res) => {
    const key = decodeURIComponent(new URL(req.url!, "http://x").pathname.replace(/^\/b\//, ""));
    if (req.method === "PUT") {
      writes.push({ key, body: await bodyOf(req) });
      objects.set(key, writes.at(-1)!.body);
      return void res.writeHead(200, { etag: '"e"', "x-amz-version-id": `v${writes.length + 1}` }).end();
    }
    const body = objects.get(key);
    if (body === undefined) return void res.writeHead(404, { "content-type": "application/xml" }).end(req.method === "HEAD" ? undefined : "<Error><Code>NoSuchKey</Code></Error>");
    res.writeHead(200, { "content-length": String(Buffer.byteLength(body)), etag: '"e"' }).end(req.method === "HEAD" ? undefined : body);
  });
  edge = createServer((req, res) => {
    invalidated.push({ url: req.url, authorization: req.headers.authorization });
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ id: "city", decoders: 2, invalidated: 2, dropped: 1 }));
  });
  env = {
    TESSERA_S3_ENDPOINT: await listen(store),
    TESSERA_S3_BUCKET: "b",
    AWS_ACCESS_KEY_ID: "id",
    AWS_SECRET_ACCESS_KEY: "secret",
    TESSERA_EDGE_URL: await listen(edge),
    TESSERA_ADMIN_TOKEN: "cli-admin-token",
  };
  Object.assign(process.env, env);
});
afterAll(() => {
  for (const name of Object.keys(env ?? {})) delete process.env[name];
  store?.close();
  edge?.close();
});
beforeEach(() => {
  objects = new Map([
    ["city.tif", "a COG"],
    ["city.tessera.json", JSON.stringify(ENTRY)],
    ["town.mosaic.json", "{}"],
  ]);
  writes = [];
  invalidated = [];
});

const entryOf = (id: string) => JSON.parse(objects.get(`${id}.tessera.json`)!) as Record<string, unknown>;
const EDGE_CALL = (id: string) => ({ url: `/admin/sources/${id}/invalidate`, authorization: "Bearer cli-admin-token" });

describe("tessera access", { timeout: 20_000 }, () => {
  it("writes the entry's access, its pin, pins and policy kept, then invalidates at the edge as pin does", async () => {
    const run = await tessera(["access", "city", "active", "--degraded-width", "800", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ id: "city", access: { profile: "active", degradedWidth: 800 }, edge: { id: "city", decoders: 2, invalidated: 2, dropped: 1 } });
    expect(entryOf("city")).toEqual({ ...ENTRY, access: { profile: "active", degradedWidth: 800 } });
    expect(invalidated).toEqual([EDGE_CALL("city")]);

    const reopened = await tessera(["access", "city", "open"]);
    expect(reopened.stdout).toBe("city is now open to anyone (edge invalidated)\n");
    expect(entryOf("city")).toEqual(ENTRY);
  });

  it("restricts a mosaic, whose entry it writes from none", async () => {
    const run = await tessera(["access", "town", "kiosk"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("town is now restricted (kiosk), not shown to anyone else (edge invalidated)\n");
    expect(entryOf("town")).toEqual({ policy: "RequireValidator", pins: [], access: { profile: "kiosk" } });
  });

  it("refuses an id that names no source (exit 1), writing nothing and asking no edge: a typo must not look restricted", async () => {
    const run = await tessera(["access", "cty", "active", "--json"]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({ error: "refused", message: 'unknown source "cty"' });
    expect([writes, invalidated]).toEqual([[], []]);
  });
});

describe("tessera publish --access", { timeout: 30_000 }, () => {
  it("writes a restriction before the upload, so the new version is never open, and pins with it", async () => {
    const run = await tessera(["publish", SAMPLE, "--id", "city", "--access", "external", "--degraded-width", "300", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const restriction = { profile: "external", degradedWidth: 300 };
    expect(JSON.parse(run.stdout)).toMatchObject({ id: "city", version: "v3", access: restriction });
    expect(writes.map((w) => [w.key, w.key.endsWith(".json") ? JSON.parse(w.body) : "bytes"])).toEqual([
      ["city.tessera.json", { ...ENTRY, access: restriction }],
      ["city.tif", "bytes"],
      ["city.tessera.json", { ...ENTRY, pin: "v3", pins: [...ENTRY.pins, { version: "v3", at: expect.any(String) }], access: restriction }],
    ]);
    expect(invalidated).toEqual([EDGE_CALL("city")]);
  });

  it("opens a source with the pin, once its new version is uploaded; without --access the entry's rule is kept", async () => {
    objects.set("city.tessera.json", JSON.stringify({ ...ENTRY, access: { profile: "active" } }));
    const opened = await tessera(["publish", SAMPLE, "--id", "city", "--access", "open"]);
    expect(opened.code, opened.stderr).toBe(0);
    expect(opened.stdout).toMatch(/^published city version v\d, open to anyone \(edge invalidated\)\n$/);
    expect(writes.map((w) => w.key)).toEqual(["city.tif", "city.tessera.json"]);
    expect(entryOf("city")).not.toHaveProperty("access");

    objects.set("city.tessera.json", JSON.stringify({ ...ENTRY, access: { profile: "kiosk" } }));
    expect((await tessera(["publish", SAMPLE, "--id", "city", "--no-invalidate"])).code).toBe(0);
    expect(entryOf("city").access).toEqual({ profile: "kiosk" });
  });
});

describe("usage errors", { timeout: 20_000 }, () => {
  it("exit 2 before the store or the edge is asked", async () => {
    const cases: [string[], string][] = [
      [["access", "city"], "missing required argument 'access'"],
      [["access", "city", "public"], "Allowed choices are open, active, kiosk, external"],
      [["access", "city", "open", "--degraded-width", "400"], "--degraded-width is for a restricted source, not an open one"],
      [["access", "city", "active", "--degraded-width", "0"], "a degraded width is a positive whole number of pixels"],
      [["access", "city", "active", "--degraded-width", "12.5"], "a degraded width is a positive whole number of pixels"],
      [["access", "city", "active", "--degraded-width", "800px"], "a degraded width is a positive whole number of pixels"],
      [["access", "../city", "active"], "source ids are letters, digits"],
      [["publish", SAMPLE, "--id", "city", "--access", "staff"], "Allowed choices are open, active, kiosk, external"],
      [["publish", SAMPLE, "--id", "city", "--degraded-width", "400"], "--degraded-width needs --access with a restricted profile"],
      [["publish", SAMPLE, "--id", "city", "--access", "open", "--degraded-width", "400"], "--degraded-width is for a restricted source, not an open one"],
    ];
    const runs = await Promise.all(cases.map(([args]) => tessera(args)));
    runs.forEach((run, i) => {
      expect(run.code, cases[i][0].join(" ")).toBe(2);
      expect(run.stderr, cases[i][0].join(" ")).toContain(cases[i][1]);
    });
    expect([writes, invalidated]).toEqual([[], []]);
  });
});
