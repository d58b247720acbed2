// `tessera describe` and `tessera publish --label/--summary/--rights` against a fake store and a
// fake edge: the entry's description merged and written with its pin, pins, policy and access
// kept, the edge invalidated; the description printed when no option is given; a new version
// keeping it; unknown ids refused; and every invalid description a usage error (exit 2) naming the
// field, with nothing written.
import { describe, expect, it } from "vitest";
import { EDGE_CALL, PINNED_ENTRY, useFakeStoreAndEdge } from "./cli-fakes";
import { SAMPLE, tessera } from "./cli-helpers";

const ENTRY = {
  ...PINNED_ENTRY,
  access: { profile: "kiosk" },
  description: { label: { en: ["Graz"] }, rights: "http://rightsstatements.org/vocab/InC/1.0/" },
};

const fake = useFakeStoreAndEdge(ENTRY);

describe("tessera describe", { timeout: 20_000 }, () => {
  it("merges into the entry's description (a field given replaces it), keeps the rest of the entry, invalidates at the edge", async () => {
    const run = await tessera([
      "describe",
      "city",
      "--label",
      "Karte von Graz, 1850",
      "--language",
      "de",
      "--metadata",
      "Datum=1850",
      "--metadata",
      "Maßstab=1:2880 = 1 Zoll",
      "--required-statement",
      "Quelle=Stadtarchiv Graz",
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const description = {
      label: { de: ["Karte von Graz, 1850"] },
      rights: "http://rightsstatements.org/vocab/InC/1.0/",
      requiredStatement: { label: { de: ["Quelle"] }, value: { de: ["Stadtarchiv Graz"] } },
      metadata: [
        { label: { de: ["Datum"] }, value: { de: ["1850"] } },
        { label: { de: ["Maßstab"] }, value: { de: ["1:2880 = 1 Zoll"] } },
      ],
    };
    expect(JSON.parse(run.stdout)).toEqual({ id: "city", description, edge: { id: "city", decoders: 2, invalidated: 2, dropped: 1 } });
    expect(fake.entryOf("city")).toEqual({ ...ENTRY, description, changed: { description: expect.any(String) } });
    expect(fake.invalidated).toEqual([EDGE_CALL("city")]);

    // Metadata given replaces the list; --clear removes a field; all of it cleared, no field at all.
    expect((await tessera(["describe", "city", "--metadata", "Date=1850", "--clear", "requiredStatement"])).code).toBe(0);
    expect(fake.entryOf("city").description).toEqual({ label: description.label, rights: description.rights, metadata: [{ label: { en: ["Date"] }, value: { en: ["1850"] } }] });
    const cleared = await tessera(["describe", "city", "--clear", "label", "--clear", "rights", "--clear", "metadata"]);
    expect(cleared.stdout).toBe("city is now described as (edge invalidated):\n  (none)\n");
    const { description: _gone, ...rest } = ENTRY;
    expect(fake.entryOf("city")).toEqual({ ...rest, changed: { description: expect.any(String) } });
  });

  it("with no option prints the description, writing nothing and asking no edge", async () => {
    const run = await tessera(["describe", "city"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("city is described as:\n  label: Graz [en]\n  rights: http://rightsstatements.org/vocab/InC/1.0/\n");
    expect(JSON.parse((await tessera(["describe", "city", "--json"])).stdout)).toEqual({ id: "city", description: ENTRY.description });
    // One written by hand that the decoders cannot read: said so, as they would leave it out.
    fake.objects.set("city.tessera.json", JSON.stringify({ ...ENTRY, description: { label: "Graz" } }));
    const unreadable = await tessera(["describe", "city"]);
    expect(unreadable.stdout).toBe('city\'s description cannot be read, so its manifest shows none: label is not a language map such as {"en": ["…"]}\n');
    expect([fake.writes, fake.invalidated]).toEqual([[], []]);
  });

  it("describes a mosaic, whose entry it writes from none", async () => {
    const run = await tessera(["describe", "town", "--summary", 'The "old" town </script>\u2028']);
    expect(run.code, run.stderr).toBe(0);
    expect(fake.entryOf("town")).toEqual({ policy: "RequireValidator", pins: [], description: { summary: { en: ['The "old" town </script>\u2028'] } }, changed: { description: expect.any(String) } });
  });

  it("refuses an id that names no source (exit 1), writing nothing and asking no edge", async () => {
    const run = await tessera(["describe", "cty", "--label", "Graz", "--json"]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({ error: "refused", message: 'unknown source "cty"' });
    expect((await tessera(["describe", "cty"])).code).toBe(1);
    expect([fake.writes, fake.invalidated]).toEqual([[], []]);
  });

  it("a stored field that cannot be read stops a change that keeps it (exit 2), until it is cleared or given anew", async () => {
    fake.objects.set("city.tessera.json", JSON.stringify({ ...ENTRY, description: { label: { en: ["Graz"] }, summary: "old" } }));
    const kept = await tessera(["describe", "city", "--label", "Graz, 1850"]);
    expect(kept.code).toBe(2);
    expect(kept.stderr).toContain("the description would not be readable: summary is not a language map");
    expect(fake.writes).toEqual([]);
    expect((await tessera(["describe", "city", "--clear", "summary"])).code).toBe(0);
    expect(fake.entryOf("city").description).toEqual({ label: { en: ["Graz"] } });
  });
});

describe("tessera publish --label --summary --rights", { timeout: 30_000 }, () => {
  it("writes the description with the pin; a new version without them keeps it", async () => {
    const run = await tessera(["publish", SAMPLE, "--id", "city", "--summary", "Survey of 1850", "--rights", "http://creativecommons.org/publicdomain/mark/1.0/", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const description = { label: { en: ["Graz"] }, summary: { en: ["Survey of 1850"] }, rights: "http://creativecommons.org/publicdomain/mark/1.0/" };
    expect(JSON.parse(run.stdout)).toMatchObject({ id: "city", version: "v2", description });
    expect(fake.writes.map((w) => w.key)).toEqual(["city.tif", "city.tessera.json"]);
    expect(fake.entryOf("city")).toEqual({ ...ENTRY, pin: "v2", pins: [...ENTRY.pins, { version: "v2", at: expect.any(String) }], description, changed: { description: expect.any(String) } });

    const again = await tessera(["publish", SAMPLE, "--id", "city", "--no-invalidate"]);
    expect(again.code, again.stderr).toBe(0);
    expect(fake.entryOf("city").description).toEqual(description);
  });
});

describe("usage errors", { timeout: 20_000 }, () => {
  it("exit 2 naming the field, before anything is written or the edge is asked", async () => {
    const cases: [string[], string][] = [
      [["describe", "city", "--rights", "https://creativecommons.org/licenses/by/4.0"], 'rights "https://creativecommons.org/licenses/by/4.0" is not a Creative Commons licence URI'],
      [["describe", "city", "--rights", "http://rightsstatements.org/vocab/InC/2.0/"], 'rights "http://rightsstatements.org/vocab/InC/2.0/" is not'],
      [["describe", "city", "--label", "Graz", "--language", "english!"], 'label has a language "english!" that is not a language tag'],
      [["describe", "city", "--summary", "x".repeat(2001)], "summary.en holds something other than strings of 1 to 2000 characters"],
      [["describe", "city", "--label", ""], "label.en holds something other than strings of 1 to 2000 characters"],
      [["describe", "city", "--metadata", "Date"], "expects label=value, such as Date=1850"],
      [["describe", "city", "--required-statement", "=Graz"], "expects label=value, such as Date=1850"],
      [["describe", "city", "--metadata", ...Array.from({ length: 51 }, (_, i) => `k${i}=v`).flatMap((p) => [p, "--metadata"]).slice(0, -1)], "metadata is not a list of at most 50"],
      [["describe", "city", "--clear", "title"], "Allowed choices are label, summary, rights, requiredStatement, metadata"],
      [["describe", "city", "--clear", "label", "--label", "Graz"], "--clear label and a new label together"],
      [["describe", "../city", "--label", "Graz"], "source ids are letters, digits"],
      [["publish", SAMPLE, "--id", "city", "--rights", "http://creativecommons.org/licenses/by/4.0/deed.de"], "is not a Creative Commons licence URI"],
    ];
    const runs = await Promise.all(cases.map(([args]) => tessera(args)));
    runs.forEach((run, i) => {
      expect(run.code, cases[i][0].join(" ").slice(0, 100)).toBe(2);
      expect(run.stderr, cases[i][0].join(" ").slice(0, 100)).toContain(cases[i][1]);
    });
    expect([fake.writes, fake.invalidated]).toEqual([[], []]);
  });
});
