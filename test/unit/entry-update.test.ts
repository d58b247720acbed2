// A catalog entry's conditional update against a stand-in store (not the project's code): when
// other writers keep winning (every PUT refused with 412, the entry's ETag new at each read, as S3
// and R2 answer when the entry changed since it was read), it gives up after its bounded attempts
// with an error that says why, having read the entry afresh before each; against a store that
// refuses the quoted ETag as Ceph RGW does, it is written under the unquoted one. And what a versioned bucket's
// update merges back from the versions racing writers stored (mergeRaced).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeS3Client } from "../../infra/local/s3";
import { ENTRY_ATTEMPTS, mergeRaced } from "../../cli/entry-update";
import { NO_ENTRY, withAccess, withDescription, withPin, type CatalogEntry } from "../../shared/catalog";
import { SourceStore } from "../../cli/source-store";

const calls = { get: 0, put: 0, conditions: new Set<string>() };
const RGW_ETAG = "0123456789abcdef0123456789abcdef";
/** If-Match of each PUT of "rgw"'s entry, whose ETag never changes and which takes it only unquoted. */
const rgwConditions: string[] = [];
let server: Server;
let store: SourceStore;

beforeAll(async () => {
  server = createServer((req, res) => {
    const rgw = req.url!.includes("rgw.tessera.json");
    if (req.method === "PUT") {
      req.resume();
      const ifMatch = String(req.headers["if-match"]);
      if (rgw) rgwConditions.push(ifMatch);
      else {
        calls.put++;
        calls.conditions.add(ifMatch);
      }
      if (rgw && ifMatch === RGW_ETAG) return void res.writeHead(200, { etag: `"${RGW_ETAG}"` }).end();
      return void res.writeHead(412, { "content-type": "application/xml" }).end("<Error><Code>PreconditionFailed</Code></Error>");
    }
    if (!rgw) calls.get++;
    res.writeHead(200, { etag: rgw ? `"${RGW_ETAG}"` : `"${String(calls.get).padStart(32, "0")}"` }).end(JSON.stringify({ pins: [] }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  store = new SourceStore(makeS3Client({ endpoint, accessKeyId: "k", secretAccessKey: "s" }), "bucket", "", "content");
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

it("gives up after its attempts with an error naming the entry, each attempt on a fresh read and conditional on it", async () => {
  await expect(store.amend("busy", (entry) => ({ ...entry, policy: "AssumeImmutable" }))).rejects.toThrow(
    `the catalog entry s3://bucket/busy.tessera.json was changed by other writers ${ENTRY_ATTEMPTS} times while this command updated it: run the command again`,
  );
  // Each attempt's PUTs named the ETag its own read found, as the store gave it, then unquoted.
  expect([calls.get, calls.put]).toEqual([ENTRY_ATTEMPTS, 2 * ENTRY_ATTEMPTS]);
  const etags = Array.from({ length: ENTRY_ATTEMPTS }, (_, i) => String(i + 1).padStart(32, "0"));
  expect(calls.conditions).toEqual(new Set(etags.flatMap((etag) => [`"${etag}"`, etag])));
});

it("sends the ETag unquoted when the store refuses it quoted, as Ceph RGW does", async () => {
  await store.amend("rgw", (entry) => ({ ...entry, policy: "AssumeImmutable" }));
  expect(rgwConditions).toEqual([`"${RGW_ETAG}"`, RGW_ETAG]);
});

describe("merging back what racing writers stored", () => {
  const base = withPin(NO_ENTRY, "v0", "2026-12-07T10:00:00.000Z");
  const theirs = withPin(base, "v1", "2026-12-07T10:00:01.000Z");
  const ours = withPin(base, "v2", "2026-12-07T10:00:02.000Z");
  const setAt = (entry: CatalogEntry, field: string, at: string): CatalogEntry => ({ ...entry, changed: { ...entry.changed, [field]: at } });

  it("keeps every pins record, in the order of their times, and pins the newest record's version", () => {
    const merged = mergeRaced(ours, [theirs]);
    expect(merged.pins.map((p) => p.version)).toEqual(["v0", "v1", "v2"]);
    expect(merged.pin).toBe("v2");
    // A write stored last whose pin is older than a racing one's: the pin is the newer record's.
    const earlier = withPin(base, "v3", "2026-12-07T09:59:59.000Z");
    expect(mergeRaced(earlier, [ours]).pin).toBe("v2");
    // A record two racing versions hold is kept once.
    expect(mergeRaced(ours, [theirs, withPin(theirs, "v4", "2026-12-07T10:00:01.500Z")]).pins).toHaveLength(4);
  });

  it("takes each other field from the version that set it last, by when it was set: a write made on an older entry does not undo it", () => {
    const restricted = setAt(withAccess(theirs, { restriction: { profile: "kiosk" } }), "access", "2026-12-07T10:00:01.000Z");
    // Ours was made on an entry older than the rule and stored after it.
    expect(mergeRaced(ours, [restricted])).toMatchObject({ access: { profile: "kiosk" }, changed: { access: "2026-12-07T10:00:01.000Z" } });
    // A rule set later (opening the source: no field) wins over one set before.
    const opened = setAt(withAccess(restricted, { open: true }), "access", "2026-12-07T10:00:03.000Z");
    expect(mergeRaced(restricted, [opened])).not.toHaveProperty("access");
    expect(mergeRaced(opened, [restricted])).not.toHaveProperty("access");
    const described = setAt(withDescription(ours, { label: { en: ["Later"] } }), "description", "2026-12-07T10:00:05.000Z");
    const raced = setAt(withDescription(theirs, { label: { en: ["Raced"] } }), "description", "2026-12-07T10:00:04.000Z");
    expect(mergeRaced(described, [raced]).description).toEqual({ label: { en: ["Later"] } });
  });
});
