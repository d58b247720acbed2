// The Presentation 3.0 manifests shared/iiif/manifest.ts builds, read back by the IIIF community's
// parser (@iiif/parser, the one Mirador 4, Clover and Theseus read manifests with): its strict
// upgrade, which fixes and warns of what departs from the specification, finds nothing to fix,
// and its normalized store holds the canvas, the image, its service and the description as built.
import { normalize, serialize, serializeConfigPresentation3 } from "@iiif/parser";
import { presentation3StrictUpgrade } from "@iiif/parser/strict";
import { describe, expect, it } from "vitest";
import type { Description } from "../../shared/description";
import { manifest, thumbnailLevel, type ManifestParts } from "../../shared/iiif/manifest";
import type { SourceInfo } from "../../shared/protocol";

const BASE = "https://tiles.example.org";
const HOSTILE = `"quoted" </script><script>alert(1)</script> \u2028 <img src=x onerror=alert(1)>`;

function source(id: string, sizes: [number, number][], description?: Description): SourceInfo {
  const [[width, height]] = sizes;
  return { id, version: "v1", width, height, tileWidth: 256, tileHeight: 256, levels: sizes.map(([w, h]) => ({ width: w, height: h })), bytes: 1, ...(description && { description }) };
}

const FULL: Description = {
  label: { en: ["Map of Graz, 1850"], de: ["Stadtplan von Graz, 1850"] },
  summary: { en: [HOSTILE] },
  requiredStatement: { label: { en: ["Attribution"] }, value: { en: ["Graz City Archive"] } },
  rights: "http://creativecommons.org/licenses/by/4.0/",
  metadata: [
    { label: { en: ["Date"] }, value: { none: ["1850"] } },
    { label: { en: [HOSTILE] }, value: { en: [HOSTILE] } },
  ],
};

const service = (path: string) => `${BASE}/iiif/3/${path}`;
const plainParts = (info: SourceInfo, path = info.id): ManifestParts => ({
  id: `${service(path)}/manifest.json`,
  image: { id: service(path), info },
  limits: {},
  thumbnailOf: { id: service(path), info },
  tileJsons: [],
});

const CASES: Record<string, ManifestParts> = {
  plain: plainParts(source("plain", [[1000, 800], [500, 400], [250, 200]])),
  described: plainParts(source("graz", [[4000, 3000], [2000, 1500], [1000, 750], [500, 375], [250, 188]], FULL)),
  georeferenced: {
    ...plainParts(source("geo", [[1024, 1024], [512, 512], [256, 256]])),
    tileJsons: [{ tileMatrixSet: "WebMercatorQuad", url: `${BASE}/tiles/geo@v1/WebMercatorQuad/tilejson.json` }],
  },
  restricted: {
    ...plainParts(source("secret", [[1000, 1000], [500, 500], [250, 250]], FULL)),
    thumbnailOf: { id: service("secret~degraded"), info: source("secret", [[400, 400], [250, 250]]) },
    auth: { context: "http://iiif.io/api/auth/2/context.json", services: [{ id: `${service("secret")}/probe`, type: "AuthProbeService2", service: [] }] },
  },
  snapshot: plainParts(source("plain", [[1000, 800], [500, 400]]), "plain@v1"),
};

/** What the parser's store holds of a manifest, keyed as it keys them. */
function read(doc: object) {
  const { entities, resource } = normalize(structuredClone(doc));
  const all = entities as unknown as Record<string, Record<string, Record<string, unknown>>>;
  const manifest = all.Manifest[resource.id];
  const [canvasRef] = manifest.items as { id: string }[];
  const canvas = all.Canvas[canvasRef.id];
  const [pageRef] = canvas.items as { id: string }[];
  const [annotationRef] = all.AnnotationPage[pageRef.id].items as { id: string }[];
  const annotation = all.Annotation[annotationRef.id];
  const [bodyRef] = annotation.body as { id: string }[];
  const body = all.ContentResource[bodyRef.id];
  return { entities: all, resource, manifest, canvas, annotation, body };
}

describe("a manifest, as the IIIF parser reads it", () => {
  for (const [name, parts] of Object.entries(CASES)) {
    it(`${name}: the strict upgrade finds nothing to fix, and it reads back as built`, () => {
      const doc = manifest(parts);
      const state = { warnings: [] as string[] };
      const upgraded = presentation3StrictUpgrade(structuredClone(doc) as never, state);
      expect(state.warnings).toEqual([]);
      expect(upgraded).toEqual(doc);

      const { entities, resource, manifest: m, canvas, annotation, body } = read(doc);
      const { info } = parts.image;
      expect(resource).toEqual({ id: parts.id, type: "Manifest" });
      expect(m.label).toEqual(info.description?.label ?? { none: [info.id] });
      expect([canvas.width, canvas.height]).toEqual([info.width, info.height]);
      expect(annotation.motivation).toEqual(["painting"]);
      expect(annotation.target).toMatchObject({ source: { id: canvas.id, type: "Canvas" } });
      expect(body).toMatchObject({ id: `${parts.image.id}/full/max/0/default.jpg`, type: "Image", format: "image/jpeg" });
      const [serviceRef] = body.service as { id: string }[];
      expect(serviceRef).toMatchObject({ id: parts.image.id, type: "ImageService3", profile: "level2" });
      // Serialized back from the store, it is the manifest that was built.
      const state2 = { mapping: {}, entities, requests: {} };
      expect(serialize(state2 as never, resource, serializeConfigPresentation3)).toEqual(doc);
    });
  }

  it("carries the publisher's description, hostile strings as plain string values", () => {
    const { manifest: m } = read(manifest(CASES.described));
    expect(m.label).toEqual(FULL.label);
    expect(m.summary).toEqual({ en: [HOSTILE] });
    expect(m.requiredStatement).toEqual(FULL.requiredStatement);
    expect(m.rights).toBe(FULL.rights);
    expect(m.metadata).toEqual(FULL.metadata);
    const text = JSON.stringify(manifest(CASES.described));
    expect((JSON.parse(text) as { summary: unknown }).summary).toEqual({ en: [HOSTILE] });
  });

  it("links a georeferenced source's TileJSON in seeAlso", () => {
    const { entities, manifest: m } = read(manifest(CASES.georeferenced));
    const [ref] = m.seeAlso as { id: string }[];
    expect(entities.ContentResource[ref.id]).toMatchObject({ id: `${BASE}/tiles/geo@v1/WebMercatorQuad/tilejson.json`, type: "Dataset", format: "application/json" });
  });

  it("restricted: the auth context before Presentation's, the probe inside the image service, the degraded image as thumbnail", () => {
    const doc = manifest(CASES.restricted);
    expect(doc["@context"]).toEqual(["http://iiif.io/api/auth/2/context.json", "http://iiif.io/api/presentation/3/context.json"]);
    const { entities, manifest: m, body } = read(doc);
    const [serviceRef] = body.service as { id: string }[];
    expect(entities.Service[serviceRef.id]).toMatchObject({ service: [expect.objectContaining({ id: `${service("secret")}/probe`, type: "AuthProbeService2" })] });
    const [thumbRef] = m.thumbnail as { id: string }[];
    expect(thumbRef.id).toBe(`${service("secret~degraded")}/full/400,400/0/default.jpg`);
  });

  it("names a snapshot's URLs", () => {
    const doc = manifest(CASES.snapshot);
    expect(doc.id).toBe(`${BASE}/iiif/3/plain@v1/manifest.json`);
    expect(doc.items[0].items[0].items[0].body.service[0].id).toBe(`${BASE}/iiif/3/plain@v1`);
  });

  it("has `full/max` at the size the service's limits let it answer", () => {
    const doc = manifest({ ...CASES.plain, limits: { maxArea: 250_000 } });
    expect(doc.items[0].items[0].items[0].body).toMatchObject({ width: 559, height: 447 });
    expect([doc.items[0].width, doc.items[0].height]).toEqual([1000, 800]);
  });

  it("takes the thumbnail from the smallest stored level at least 300 px wide; none when only a huge level is stored", () => {
    expect(thumbnailLevel(source("a", [[4000, 3000], [2000, 1500], [1000, 750], [500, 375], [250, 188]]))).toEqual({ width: 500, height: 375 });
    expect(thumbnailLevel(source("b", [[200, 100]]))).toEqual({ width: 200, height: 100 });
    expect(thumbnailLevel(source("c", [[20000, 20000]]))).toBeUndefined();
    expect(manifest({ ...CASES.plain, thumbnailOf: { id: service("c"), info: source("c", [[20000, 20000]]) } })).not.toHaveProperty("thumbnail");
    expect(manifest({ ...CASES.plain, thumbnailOf: undefined })).not.toHaveProperty("thumbnail");
  });
});
