// The IIIF Presentation 3.0 collection page (shared/iiif/collection.ts) as a viewer's parser
// (@iiif/parser) reads it: its strict upgrade warns of nothing, and its normalized store holds
// the page, its manifests with their labels, the next page as a Collection, and the whole as partOf.
import { normalize } from "@iiif/parser";
import { presentation3StrictUpgrade } from "@iiif/parser/strict";
import { describe, expect, it } from "vitest";
import { collection, type CollectionParts } from "../../shared/iiif/collection";

const BASE = "https://tiles.example.org";
const parts = (over: Partial<CollectionParts>): CollectionParts => ({
  collectionId: `${BASE}/iiif/3/collection.json`,
  listing: { sources: [{ id: "graz", label: { en: ["Map of Graz, 1850"] } }, { id: "plain" }], next: "plain" },
  manifestId: (id) => `${BASE}/iiif/3/${id}/manifest.json`,
  pageAfter: (after) => `${BASE}/iiif/3/collection.json?page=${after}`,
  ...over,
});

type Entities = Record<string, Record<string, Record<string, any>>>;

describe("a collection page", () => {
  for (const [what, after] of [["the first page", undefined], ["a further page", "a"]] as const) {
    it(`is what the parser reads without a fix: ${what}`, () => {
      const doc = collection(parts({ after }));
      const state = { warnings: [] as string[] };
      presentation3StrictUpgrade(structuredClone(doc) as never, state as never);
      // No warning; the upgrade does give each referenced item an empty `items`, as it would any
      // reference, which is the parser's habit, not a fix (a reference needs only id, type, label).
      expect(state.warnings).toEqual([]);
      const { entities, resource } = normalize(structuredClone(doc));
      const all = entities as unknown as Entities;
      const page = all.Collection[resource.id];
      expect(page.id).toBe(after === undefined ? `${BASE}/iiif/3/collection.json` : `${BASE}/iiif/3/collection.json?page=a`);
      expect((page.items as { id: string; type: string }[]).map((i) => i.type)).toEqual(["Manifest", "Manifest", "Collection"]);
      expect(all.Manifest[`${BASE}/iiif/3/graz/manifest.json`].label).toEqual({ en: ["Map of Graz, 1850"] });
      expect(all.Manifest[`${BASE}/iiif/3/plain/manifest.json`].label).toEqual({ none: ["plain"] });
      expect(all.Collection[`${BASE}/iiif/3/collection.json?page=plain`].type).toBe("Collection");
      expect(page.partOf.map((p: { id: string }) => p.id)).toEqual(after === undefined ? [] : [`${BASE}/iiif/3/collection.json`]);
    });
  }

  it("has no next page item on the last page, and may be empty", () => {
    const last = collection(parts({ after: "plain", listing: { sources: [] } }));
    expect(last.items).toEqual([]);
  });
});
