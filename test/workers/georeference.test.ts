// A placed source's georeference through the Worker: navPlace and the Georeference Extension
// annotation in its manifest, and GET /iiif/3/{id}/georeference.json, public and cached like the
// manifest, 404 where there is nothing to place. Built from the cached metadata alone.
import { beforeEach, describe, expect, it } from "vitest";
import type { Env } from "../../edge/env";
import type { SourceInfo } from "../../shared/protocol";
import { ACCESS_VARS, BASE, getWith, cacheSourceInfo, georeferencedSource, heartbeat, squareSource } from "./helpers";

type Json = Record<string, any>;
const PRESENTATION = "http://iiif.io/api/presentation/3/context.json";
const GEOREF = "http://iiif.io/api/extension/georef/1/context.json";
const NAVPLACE = "http://iiif.io/api/extension/navplace/context.json";

/** A 1024² source placed as the decoder places one: pixel (x, y) ↦ (10 + x/1000, 50 − y/1000). */
function placedSource(id: string): SourceInfo {
  const geo = (x: number, y: number): [number, number] => [10 + x / 1000, 50 - y / 1000];
  const steps = [0, 256, 512, 768, 1024];
  const edge = [0, 128, 256, 384, 512, 640, 768, 896];
  const base = georeferencedSource(id);
  return {
    ...base,
    georeference: {
      ...base.georeference!,
      controlPoints: steps.flatMap((y) => steps.map((x) => ({ resource: [x, y] as [number, number], geo: geo(x, y) }))),
      footprint: [...edge.map((x) => geo(x, 0)), ...edge.map((y) => geo(1024, y)), ...edge.map((x) => geo(1024 - x, 1024)), ...edge.map((y) => geo(0, 1024 - y))],
    },
  };
}

const call = getWith;

const json = async (path: string, vars: Partial<Env> = {}) => {
  const res = await call(path, vars);
  expect(res.status, path).toBe(200);
  return (await res.json()) as Json;
};

beforeEach(async () => {
  expect((await heartbeat()).status).toBe(204);
  await cacheSourceInfo(placedSource("placed"));
  await cacheSourceInfo(placedSource("placed"), "v1");
  await cacheSourceInfo({ ...placedSource("secret"), access: { profile: "active", degradedWidth: 400 } });
  await cacheSourceInfo(squareSource("plain", [1000, 500, 250]));
  await cacheSourceInfo(georeferencedSource("unplaced")); // georeferenced, but no control points
  await cacheSourceInfo({ ...placedSource("city"), mosaic: { kind: "mosaic", assets: 4, maxAssetsPerKey: 1, quadkeyZoom: 3 } });
});

describe("a placed source's manifest", () => {
  it("has navPlace (the footprint, a closed counter-clockwise ring) and the extensions' contexts before Presentation's", async () => {
    const doc = await json("/iiif/3/placed/manifest.json");
    expect(doc["@context"]).toEqual([NAVPLACE, GEOREF, PRESENTATION]);
    expect(doc.navPlace).toMatchObject({ id: `${doc.id}/feature-collection/1`, type: "FeatureCollection" });
    const [feature] = doc.navPlace.features;
    expect(feature).toMatchObject({ id: `${doc.id}/feature/1`, type: "Feature", properties: { label: doc.label }, geometry: { type: "Polygon" } });
    const [ring] = feature.geometry.coordinates as [number, number][][];
    expect(ring).toHaveLength(33);
    expect(ring.at(-1)).toEqual(ring[0]);
    const area = ring.slice(0, -1).reduce((sum, [x0, y0], i) => sum + x0 * ring[i + 1][1] - ring[i + 1][0] * y0, 0);
    expect(area, "counter-clockwise").toBeGreaterThan(0);
    expect(ring).toContainEqual([10, 50]);
  });

  it("holds on its canvas the annotation georeference.json serves, targeting the image service the canvas is painted with", async () => {
    const doc = await json("/iiif/3/placed/manifest.json");
    const canvas = doc.items[0];
    const service = canvas.items[0].items[0].body.service[0].id;
    const [page] = canvas.annotations;
    expect(page).toMatchObject({ id: `${canvas.id}/annotations/1`, type: "AnnotationPage" });
    const [annotation] = page.items;
    const alone = await json("/iiif/3/placed/georeference.json");
    expect(alone["@context"]).toEqual([GEOREF, PRESENTATION]);
    const { "@context": _, ...rest } = alone;
    expect(annotation).toEqual(rest);
    expect(annotation).toMatchObject({ id: `${service}/georeference.json`, type: "Annotation", motivation: "georeferencing" });
    expect(annotation.target).toEqual({
      type: "SpecificResource",
      source: { id: service, type: "ImageService3", profile: "level2", width: 1024, height: 1024, partOf: [{ id: canvas.id, type: "Canvas", partOf: [{ id: doc.id, type: "Manifest" }] }] },
      selector: { type: "SvgSelector", value: '<svg width="1024" height="1024"><polygon points="0,0 1024,0 1024,1024 0,1024" /></svg>' },
    });
    expect(annotation.body.type).toBe("FeatureCollection");
    expect(annotation.body.transformation).toEqual({ type: "thinPlateSpline" });
    expect(annotation.body.features).toHaveLength(25);
    expect(annotation.body.features[6]).toEqual({ type: "Feature", properties: { resourceCoords: [256, 256] }, geometry: { type: "Point", coordinates: [10.256, 49.744] } });
  });

  it("has neither for a source without control points; a restricted one's has both, with the auth context too", async () => {
    for (const id of ["plain", "unplaced"]) {
      const doc = await json(`/iiif/3/${id}/manifest.json`);
      expect(doc, id).not.toHaveProperty("navPlace");
      expect(doc.items[0], id).not.toHaveProperty("annotations");
      expect(doc["@context"], id).toBe(PRESENTATION);
    }
    const secret = await json("/iiif/3/secret/manifest.json", ACCESS_VARS);
    expect(secret["@context"]).toEqual([NAVPLACE, GEOREF, "http://iiif.io/api/auth/2/context.json", PRESENTATION]);
    expect(secret.items[0].annotations[0].items[0].motivation).toBe("georeferencing");
  });
});

describe("GET /iiif/3/{id}/georeference.json", () => {
  it("is cached as the manifest is: same Cache-Control, a strong ETag (304), the version, JSON-LD when asked, HEAD", async () => {
    const res = await call("/iiif/3/placed/georeference.json");
    const manifest = await call("/iiif/3/placed/manifest.json");
    expect(res.headers.get("cache-control")).toBe(manifest.headers.get("cache-control"));
    expect(res.headers.get("x-tessera-version")).toBe("v1");
    expect(res.headers.get("content-type")).toBe("application/json");
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"/);
    expect((await call("/iiif/3/placed/georeference.json", {}, { headers: { "if-none-match": etag } })).status).toBe(304);
    const ld = await call("/iiif/3/placed/georeference.json", {}, { headers: { accept: "application/ld+json" } });
    expect(ld.headers.get("content-type")).toBe(`application/ld+json;profile="${GEOREF}"`);
    const head = await call("/iiif/3/placed/georeference.json", {}, { method: "HEAD" });
    expect(head.status, await head.text()).toBe(200);
  });

  it("under a snapshot names its version and is immutable; a restricted source's is public", async () => {
    const res = await call("/iiif/3/placed@v1/georeference.json", { PLAIN_ID_MODE: "revalidate" });
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const doc = (await res.json()) as Json;
    expect(doc.id).toBe(`${BASE}/iiif/3/placed@v1/georeference.json`);
    expect(doc.target.source.id).toBe(`${BASE}/iiif/3/placed@v1`);
    expect(doc.target.source.partOf[0].partOf[0].id).toBe(`${BASE}/iiif/3/placed@v1/manifest.json`);
    const secret = await call("/iiif/3/secret/georeference.json", ACCESS_VARS);
    expect(secret.status).toBe(200);
    expect(secret.headers.get("cache-control")).toMatch(/^public/);
  });

  it("is 404 for a source not georeferenced or without control points, a mosaic, a degraded image, an unknown source", async () => {
    for (const [path, message] of [
      ["/iiif/3/plain/georeference.json", "has no georeference"],
      ["/iiif/3/unplaced/georeference.json", "has no georeference"],
      ["/iiif/3/city/georeference.json", "mosaic"],
      ["/iiif/3/secret~degraded/georeference.json", "has no georeference"],
    ] as const) {
      const res = await call(path, ACCESS_VARS);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { message: string }).message, path).toContain(message);
    }
  });
});
