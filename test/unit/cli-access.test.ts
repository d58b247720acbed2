// `tessera access` and `tessera publish --access` against a fake store and a fake edge: the
// entry's access written with its pin, pins and policy kept, the edge invalidated as `pin` does,
// a restriction written before a publish's upload (so the new version is never open), unknown
// ids refused, and every usage error exit 2 before the store or the edge is asked.
import { describe, expect, it } from "vitest";
import { EDGE_CALL, PINNED_ENTRY, useFakeStoreAndEdge } from "./cli-fakes";
import { SAMPLE, tessera } from "./cli-helpers";

const ENTRY = PINNED_ENTRY;

const fake = useFakeStoreAndEdge(ENTRY);

describe("tessera access", { timeout: 20_000 }, () => {
  it("writes the entry's access, its pin, pins and policy kept, then invalidates at the edge as pin does", async () => {
    const run = await tessera(["access", "city", "active", "--degraded-width", "800", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ id: "city", access: { profile: "active", degradedWidth: 800 }, edge: { id: "city", decoders: 2, invalidated: 2, dropped: 1 } });
    // Beside the rule, when it was set: how racing writes to a versioned bucket are merged.
    expect(fake.entryOf("city")).toEqual({ ...ENTRY, access: { profile: "active", degradedWidth: 800 }, changed: { access: expect.any(String) } });
    expect(fake.invalidated).toEqual([EDGE_CALL("city")]);

    const reopened = await tessera(["access", "city", "open"]);
    expect(reopened.stdout).toBe("city is now open to anyone (edge invalidated)\n");
    expect(fake.entryOf("city")).toEqual({ ...ENTRY, changed: { access: expect.any(String) } });
  });

  it("restricts a mosaic, whose entry it writes from none", async () => {
    const run = await tessera(["access", "town", "kiosk"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("town is now restricted (kiosk), not shown to anyone else (edge invalidated)\n");
    expect(fake.entryOf("town")).toEqual({ policy: "RequireValidator", pins: [], access: { profile: "kiosk" }, changed: { access: expect.any(String) } });
  });

  it("refuses an id that names no source (exit 1), writing nothing and asking no edge: a typo must not look restricted", async () => {
    const run = await tessera(["access", "cty", "active", "--json"]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({ error: "refused", message: 'unknown source "cty"' });
    expect([fake.writes, fake.invalidated]).toEqual([[], []]);
  });
});

describe("tessera publish --access", { timeout: 30_000 }, () => {
  it("writes a restriction before the upload, so the new version is never open, and pins with it", async () => {
    const run = await tessera(["publish", SAMPLE, "--id", "city", "--access", "external", "--degraded-width", "300", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const restriction = { profile: "external", degradedWidth: 300 };
    expect(JSON.parse(run.stdout)).toMatchObject({ id: "city", version: "v3", access: restriction });
    expect(fake.writes.map((w) => [w.key, w.key.endsWith(".json") ? JSON.parse(w.body) : "bytes"])).toEqual([
      ["city.tessera.json", { ...ENTRY, access: restriction, changed: { access: expect.any(String) } }],
      ["city.tif", "bytes"],
      ["city.tessera.json", { ...ENTRY, pin: "v3", pins: [...ENTRY.pins, { version: "v3", at: expect.any(String) }], access: restriction, changed: { access: expect.any(String) } }],
    ]);
    expect(fake.invalidated).toEqual([EDGE_CALL("city")]);
  });

  it("opens a source with the pin, once its new version is uploaded; without --access the entry's rule is kept", async () => {
    fake.objects.set("city.tessera.json", JSON.stringify({ ...ENTRY, access: { profile: "active" } }));
    const opened = await tessera(["publish", SAMPLE, "--id", "city", "--access", "open"]);
    expect(opened.code, opened.stderr).toBe(0);
    expect(opened.stdout).toMatch(/^published city version v\d, open to anyone \(edge invalidated\)\n$/);
    expect(fake.writes.map((w) => w.key)).toEqual(["city.tif", "city.tessera.json"]);
    expect(fake.entryOf("city")).not.toHaveProperty("access");

    fake.objects.set("city.tessera.json", JSON.stringify({ ...ENTRY, access: { profile: "kiosk" } }));
    expect((await tessera(["publish", SAMPLE, "--id", "city", "--no-invalidate"])).code).toBe(0);
    expect(fake.entryOf("city").access).toEqual({ profile: "kiosk" });
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
    expect([fake.writes, fake.invalidated]).toEqual([[], []]);
  });
});
