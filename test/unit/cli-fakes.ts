// A fake store (bucket "b", objects by key, every write recorded) and a fake edge (every
// invalidation recorded) for the tessera commands that write a source's catalog entry, with the
// environment that points the command at them.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach } from "vitest";

export interface FakeStoreAndEdge {
  /** The store's objects by key. */
  objects: Map<string, string>;
  /** Every PUT, in order. */
  writes: { key: string; body: string }[];
  /** What the edge was asked. */
  invalidated: { url?: string; authorization?: string }[];
  /** Starts afresh with `objects` stored, nothing written or invalidated. */
  reset(objects: [string, string][]): void;
  /** The stored entry of `id`, parsed. */
  entryOf(id: string): Record<string, unknown>;
  close(): void;
}

/** The edge's invalidation of `id`, as the commands send it. */
export const EDGE_CALL = (id: string) => ({ url: `/admin/sources/${id}/invalidate`, authorization: "Bearer cli-admin-token" });

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A COG's entry as `tessera` writes it: pinned, one pin so far. */
export const PINNED_ENTRY = { pin: "v1", policy: "AssumeImmutable", pins: [{ version: "v1", at: "2026-11-30T20:51:28.840Z" }] };

/**
 * The fakes for this test file, started before its tests; before each, the store holds afresh a
 * COG "city" with the entry `cityEntry` and a mosaic "town" with none.
 */
export function useFakeStoreAndEdge(cityEntry: object): FakeStoreAndEdge {
  const stored: [string, string][] = [
    ["city.tif", "a COG"],
    ["city.tessera.json", JSON.stringify(cityEntry)],
    ["town.mosaic.json", "{}"],
  ];
  let started: { fake: FakeStoreAndEdge } | undefined;
  beforeAll(async () => void (started = { fake: await fakeStoreAndEdge() }));
  afterAll(() => started?.fake.close());
  beforeEach(() => started!.fake.reset(stored));
  // The tests read it after beforeAll has started it.
  return new Proxy({} as FakeStoreAndEdge, { get: (_, name) => started!.fake[name as keyof FakeStoreAndEdge] });
}

/** Starts both and points process.env at them (close() takes it back). */
async function fakeStoreAndEdge(): Promise<FakeStoreAndEdge> {
  const fake: FakeStoreAndEdge = {
    objects: new Map(),
    writes: [],
    invalidated: [],
    reset(objects) {
      fake.objects = new Map(objects);
      fake.writes = [];
      fake.invalidated = [];
    },
    entryOf: (id) => JSON.parse(fake.objects.get(`${id}.tessera.json`)!) as Record<string, unknown>,
    close() {
      for (const name of Object.keys(env)) delete process.env[name];
      store.close();
      edge.close();
    },
  };
  // The VersionId of each key's current object: a write's is `v{n}`, n counting the writes.
  const versionIds = new Map<string, string>();
  const store = createServer(async (req, res) => {
    const url = new URL(req.url!, "http://x");
    // tessera asks first whether the bucket keeps versions: this one does.
    if (url.searchParams.has("versioning")) return void res.end("<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>");
    // After writing an entry, tessera lists its versions: no one else writes here, so only the current one.
    if (url.searchParams.has("versions")) {
      const key = url.searchParams.get("prefix")!;
      const version = versionIds.has(key) ? `<Version><Key>${key}</Key><VersionId>${versionIds.get(key)}</VersionId><IsLatest>true</IsLatest></Version>` : "";
      return void res.end(`<ListVersionsResult><Name>b</Name><Prefix>${key}</Prefix><IsTruncated>false</IsTruncated>${version}</ListVersionsResult>`);
    }
    const key = decodeURIComponent(url.pathname.replace(/^\/b\//, ""));
    if (req.method === "PUT") {
      fake.writes.push({ key, body: await bodyOf(req) });
      fake.objects.set(key, fake.writes.at(-1)!.body);
      versionIds.set(key, `v${fake.writes.length + 1}`);
      return void res.writeHead(200, { etag: '"e"', "x-amz-version-id": versionIds.get(key)! }).end();
    }
    const body = fake.objects.get(key);
    if (body === undefined) return void res.writeHead(404, { "content-type": "application/xml" }).end(req.method === "HEAD" ? undefined : "<Error><Code>NoSuchKey</Code></Error>");
    res.writeHead(200, { "content-length": String(Buffer.byteLength(body)), etag: '"e"' }).end(req.method === "HEAD" ? undefined : body);
  });
  const edge = createServer((req, res) => {
    fake.invalidated.push({ url: req.url, authorization: req.headers.authorization });
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ id: "city", decoders: 2, invalidated: 2, dropped: 1 }));
  });
  const env = {
    TESSERA_S3_ENDPOINT: await listen(store),
    TESSERA_S3_BUCKET: "b",
    AWS_ACCESS_KEY_ID: "id",
    AWS_SECRET_ACCESS_KEY: "secret",
    TESSERA_EDGE_URL: await listen(edge),
    TESSERA_ADMIN_TOKEN: "cli-admin-token",
  };
  Object.assign(process.env, env);
  return fake;
}
