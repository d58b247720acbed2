// GET /iiif/3/{id}/manifest.json through the Worker: the IIIF Presentation 3.0 manifest, answered
// by the edge from the source's cached metadata alone (no decoder is asked), checked against the
// specification's MUSTs and against the info.json it names.
import { beforeEach, describe, expect, it } from "vitest";
import type { Description } from "../../shared/description";
import type { SourceInfo } from "../../shared/protocol";
import type { Env } from "../../edge/env";
import { infoKey } from "../../edge/source-info";
import { ACCESS_VARS, BASE, getWith, cacheSourceInfo, georeferencedSource, heartbeat, metric, squareSource } from "./helpers";

const HOSTILE = [`"quoted" and 'single'`, "</script><script>alert(1)</script>", "line\u2028separator\u2029paragraph", `<img src=x onerror="alert(1)">`, "\\u0022 not an escape"];
const DESCRIPTION: Description = {
  label: { en: ["Map of Graz, 1850"], de: ["Stadtplan von Graz, 1850"] },
  summary: { en: HOSTILE },
  requiredStatement: { label: { en: ["Attribution"] }, value: { en: [HOSTILE[1]] } },
  rights: "http://rightsstatements.org/vocab/NoC-NC/1.0/",
  metadata: [
    { label: { en: ["Date"] }, value: { none: ["1850"] } },
    { label: { en: [HOSTILE[3]] }, value: { "de-AT": [HOSTILE[2], HOSTILE[0]] } },
  ],
};

/** Parsed JSON, read loosely: the checks below say what each part must be. */
type Json = Record<string, any>;

const call = getWith;

async function manifestOf(path: string, vars: Partial<Env> = {}): Promise<Json> {
  const res = await call(path, vars);
  expect(res.status, path).toBe(200);
  const doc = (await res.json()) as Json;
  expectPresentation3(doc);
  return doc;
}

// The Presentation API 3.0's MUSTs for what a manifest of one image holds.
const URI = /^https?:\/\/[^\s#]+$/;
const LANGUAGE = /^(none|[a-zA-Z]{2,3}(-[a-zA-Z0-9]{1,8})*)$/;
const RIGHTS = /^http:\/\/(creativecommons\.org\/(licenses|publicdomain)\/|rightsstatements\.org\/vocab\/)/;

function expectLanguageMap(value: unknown, what: string): void {
  expect(value, what).toBeTypeOf("object");
  const entries = Object.entries(value as object);
  expect(entries.length, what).toBeGreaterThan(0);
  for (const [language, values] of entries) {
    expect(language, what).toMatch(LANGUAGE);
    expect(Array.isArray(values) && values.every((v) => typeof v === "string"), `${what}.${language} is a list of strings`).toBe(true);
  }
}

const expectResource = (r: Json, type: string, what: string) => {
  expect(r.id, `${what}.id`).toMatch(URI);
  expect(r.type, `${what}.type`).toBe(type);
};

function expectServices(services: unknown, what: string): void {
  expect(Array.isArray(services), `${what} is a list`).toBe(true);
  for (const s of services as Json[]) {
    // Every service has a type; an external access service has no id, by the Auth specification.
    expect(typeof (s.type ?? s["@type"]), `${what} type`).toBe("string");
    if (s.id !== undefined) expect(s.id, `${what} id`).toMatch(URI);
    if (s.service) expectServices(s.service, `${what}.service`);
  }
}

function expectContentResources(list: unknown, type: string, what: string): void {
  expect(Array.isArray(list) && list.length > 0, `${what} is a non-empty list`).toBe(true);
  for (const r of list as Json[]) {
    expectResource(r, type, what);
    if (r.service) expectServices(r.service, `${what}.service`);
  }
}

function expectPresentation3(doc: Json): void {
  const contexts = [doc["@context"]].flat();
  expect(contexts.at(-1), "Presentation's context, last").toBe("http://iiif.io/api/presentation/3/context.json");
  expectResource(doc, "Manifest", "manifest");
  expectLanguageMap(doc.label, "manifest.label");
  if (doc.summary) expectLanguageMap(doc.summary, "summary");
  for (const [i, pair] of [...(doc.metadata ?? []), ...(doc.requiredStatement ? [doc.requiredStatement] : [])].entries()) {
    expectLanguageMap(pair.label, `pair ${i} label`);
    expectLanguageMap(pair.value, `pair ${i} value`);
  }
  if (doc.rights !== undefined) {
    expect(typeof doc.rights).toBe("string");
    expect(doc.rights).toMatch(RIGHTS);
  }
  if (doc.thumbnail) expectContentResources(doc.thumbnail, "Image", "thumbnail");
  if (doc.seeAlso) expectContentResources(doc.seeAlso, "Dataset", "seeAlso");
  expect(Array.isArray(doc.items) && doc.items.length > 0, "manifest.items").toBe(true);
  for (const canvas of doc.items as Json[]) {
    expectResource(canvas, "Canvas", "canvas");
    expect(Number.isInteger(canvas.width) && canvas.width > 0, "canvas.width a positive integer").toBe(true);
    expect(Number.isInteger(canvas.height) && canvas.height > 0, "canvas.height a positive integer").toBe(true);
    expect(canvas.items.length, "canvas.items").toBeGreaterThan(0);
    for (const page of canvas.items as Json[]) {
      expectResource(page, "AnnotationPage", "page");
      expect(page.items.length, "page.items").toBeGreaterThan(0);
      for (const annotation of page.items as Json[]) {
        expectResource(annotation, "Annotation", "annotation");
        expect(annotation.motivation).toBe("painting");
        expect(annotation.target, "the painting targets the canvas").toBe(canvas.id);
        expectContentResources([annotation.body], "Image", "body");
        expect(Number.isInteger(annotation.body.width) && Number.isInteger(annotation.body.height)).toBe(true);
      }
    }
  }
}

const bodyOf = (doc: Json) => doc.items[0].items[0].items[0].body as Json;

beforeEach(async () => {
  expect((await heartbeat()).status).toBe(204);
  await cacheSourceInfo(squareSource("plain", [1000, 500, 250]));
  await cacheSourceInfo(squareSource("plain", [1000, 500, 250]), "v1");
  await cacheSourceInfo({ ...squareSource("graz", [4000, 2000, 1000, 500, 250]), description: DESCRIPTION });
  await cacheSourceInfo(georeferencedSource("geo"));
  await cacheSourceInfo(georeferencedSource("geo"), "v1");
  await cacheSourceInfo({ ...squareSource("secret", [1000, 500, 250]), access: { profile: "active", degradedWidth: 400 } });
  await cacheSourceInfo({ ...squareSource("sealed", [1000, 500, 250]), access: { profile: "kiosk" } });
  const city: SourceInfo = { ...squareSource("city", [1024]), mosaic: { kind: "mosaic", assets: 4, maxAssetsPerKey: 1, quadkeyZoom: 3 } };
  await cacheSourceInfo(city);
  await caches.default.put(infoKey({ id: "nothing" }), new Response('no source "nothing"', { status: 404, headers: { "cache-control": "max-age=3600" } }));
});

describe("a manifest", () => {
  it("is one Canvas the image's size, painted with the image through the service info.json describes, from metadata alone", async () => {
    const admitted = await metric("released_total");
    const res = await call("/iiif/3/plain/manifest.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("cache-control")).toBe("public, max-age=60, stale-while-revalidate=3600");
    expect(res.headers.get("x-tessera-version")).toBe("v1");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const doc = (await res.json()) as Json;
    expectPresentation3(doc);
    const service = `${BASE}/iiif/3/plain@v1`;
    const info = (await (await call("/iiif/3/plain/info.json")).json()) as Json;
    expect(info.id).toBe(service);
    const imageService = { id: service, type: "ImageService3", profile: "level2" };
    const thumbnail = [{ id: `${service}/full/500,500/0/default.jpg`, type: "Image", format: "image/jpeg", width: 500, height: 500, service: [imageService] }];
    expect(doc).toEqual({
      "@context": "http://iiif.io/api/presentation/3/context.json",
      id: `${service}/manifest.json`,
      type: "Manifest",
      label: { none: ["plain"] },
      thumbnail,
      items: [
        {
          id: `${service}/canvas/1`,
          type: "Canvas",
          label: { none: ["plain"] },
          width: 1000,
          height: 1000,
          thumbnail,
          items: [
            {
              id: `${service}/canvas/1/page/1`,
              type: "AnnotationPage",
              items: [
                {
                  id: `${service}/canvas/1/page/1/image`,
                  type: "Annotation",
                  motivation: "painting",
                  body: { id: `${service}/full/max/0/default.jpg`, type: "Image", format: "image/jpeg", width: 1000, height: 1000, service: [imageService] },
                  target: `${service}/canvas/1`,
                },
              ],
            },
          ],
        },
      ],
    });
    // The id it names answers: the manifest itself, and the image service's info.json.
    expect((await call(new URL(doc.id).pathname)).status).toBe(200);
    expect(await metric("released_total")).toBe(admitted);
  });

  it("has a strong ETag (304 on If-None-Match), JSON-LD when asked, and HEAD", async () => {
    const first = await call("/iiif/3/plain/manifest.json");
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect((await call("/iiif/3/plain/manifest.json", {}, { headers: { "if-none-match": etag } })).status).toBe(304);
    const ld = await call("/iiif/3/plain/manifest.json", {}, { headers: { accept: "application/ld+json" } });
    expect(ld.headers.get("content-type")).toBe('application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"');
    expect(ld.headers.get("vary")).toContain("Accept");
    expect(ld.headers.get("etag")).not.toBe(etag);
    expect(await ld.text()).toBe(await first.text());
    const head = await call("/iiif/3/plain/manifest.json", {}, { method: "HEAD" });
    expect([head.status, head.headers.get("etag")]).toEqual([200, etag]);
  });

  it("carries the publisher's description; hostile strings come out as the same string values", async () => {
    const res = await call("/iiif/3/graz/manifest.json");
    const text = await res.text();
    const doc = JSON.parse(text) as Json;
    expectPresentation3(doc);
    expect(doc.label).toEqual(DESCRIPTION.label);
    expect(doc.items[0].label).toEqual(DESCRIPTION.label);
    expect(doc.summary).toEqual({ en: HOSTILE });
    expect(doc.requiredStatement).toEqual(DESCRIPTION.requiredStatement);
    expect(doc.rights).toBe(DESCRIPTION.rights);
    expect(doc.metadata).toEqual(DESCRIPTION.metadata);
    // No string ends early: every quote in the text is escaped, the whole is one JSON object.
    expect(text.startsWith("{") && text.endsWith("}")).toBe(true);
    expect(text).not.toContain(`"quoted"`);
    // The smallest level at least 300 wide is the thumbnail.
    expect(doc.thumbnail[0]).toMatchObject({ id: `${BASE}/iiif/3/graz@v1/full/500,500/0/default.jpg`, width: 500, height: 500 });
  });

  it("links a georeferenced source's TileJSON in seeAlso, as its info.json does", async () => {
    const doc = await manifestOf("/iiif/3/geo/manifest.json");
    const info = (await (await call("/iiif/3/geo/info.json")).json()) as Json;
    expect(doc.seeAlso).toEqual(info.seeAlso);
    expect(doc.seeAlso.map((s: Json) => s.id)).toEqual([`${BASE}/tiles/geo@v1/WebMercatorQuad/tilejson.json`, `${BASE}/tiles/geo@v1/WorldCRS84Quad/tilejson.json`]);
    expect(await manifestOf("/iiif/3/plain/manifest.json")).not.toHaveProperty("seeAlso");
  });

  it("follows PLAIN_ID_MODE as info.json does; a snapshot's names its own version and is immutable", async () => {
    const revalidate = await manifestOf("/iiif/3/geo/manifest.json", { PLAIN_ID_MODE: "revalidate" });
    expect(revalidate.id).toBe(`${BASE}/iiif/3/geo/manifest.json`);
    expect(bodyOf(revalidate).service[0].id).toBe(`${BASE}/iiif/3/geo`);
    expect(revalidate.seeAlso[0].id).toBe(`${BASE}/tiles/geo/WebMercatorQuad/tilejson.json`);
    const res = await call("/iiif/3/geo@v1/manifest.json", { PLAIN_ID_MODE: "revalidate" });
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const snapshot = (await res.json()) as Json;
    expectPresentation3(snapshot);
    expect(snapshot.id).toBe(`${BASE}/iiif/3/geo@v1/manifest.json`);
    expect(bodyOf(snapshot).service[0].id).toBe(`${BASE}/iiif/3/geo@v1`);
  });

  it("is 404 for an unknown source, a mosaic, a degraded image, and at 2.1's path (which names the 3.0 one)", async () => {
    for (const [path, message] of [
      ["/iiif/3/nothing/manifest.json", 'no source "nothing"'],
      ["/iiif/3/city/manifest.json", "mosaic"],
      ["/iiif/3/secret~degraded/manifest.json", "has no manifest"],
      ["/iiif/3/plain@v1~degraded/manifest.json", "has no manifest"],
      ["/iiif/2/plain/manifest.json", `${BASE}/iiif/3/plain/manifest.json`],
      ["/iiif/2/plain@v1/manifest.json", `${BASE}/iiif/3/plain@v1/manifest.json`],
    ] as const) {
      const res = await call(path, ACCESS_VARS);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { message: string }).message, path).toContain(message);
    }
    // An id with an unescaped "/" is no source's, as under info.json.
    expect((await call("/iiif/3/a/b/manifest.json")).status).toBe(404);
  });
});

describe("a restricted source's manifest", () => {
  it("is public, names the probe inside the image service (auth context first) and shows the degraded image as thumbnail", async () => {
    const res = await call("/iiif/3/secret/manifest.json", ACCESS_VARS);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=60, stale-while-revalidate=3600");
    const doc = (await res.json()) as Json;
    expectPresentation3(doc);
    expect(doc["@context"]).toEqual(["http://iiif.io/api/auth/2/context.json", "http://iiif.io/api/presentation/3/context.json"]);
    const service = bodyOf(doc).service[0] as Json;
    const info = (await (await call("/iiif/3/secret/info.json", ACCESS_VARS)).json()) as Json;
    expect(service.id).toBe(info.id);
    expect(service.service).toEqual(info.service); // the probe, as info.json declares it
    expect(service.service[0]).toMatchObject({ id: `${info.id}/probe`, type: "AuthProbeService2" });
    const degraded = `${BASE}/iiif/3/secret@v1~degraded`;
    expect(doc.thumbnail).toEqual([
      { id: `${degraded}/full/400,400/0/default.jpg`, type: "Image", format: "image/jpeg", width: 400, height: 400, service: [{ id: degraded, type: "ImageService3", profile: "level2" }] },
    ]);
    // No thumbnail shows the restricted image itself.
    expect(JSON.stringify(doc.thumbnail)).not.toContain(`${info.id}/`);
  });

  it("has no thumbnail when anyone may see nothing of it", async () => {
    const doc = await manifestOf("/iiif/3/sealed/manifest.json", ACCESS_VARS);
    expect(doc).not.toHaveProperty("thumbnail");
    expect(doc.items[0]).not.toHaveProperty("thumbnail");
    expect(bodyOf(doc).service[0].service[0].type).toBe("AuthProbeService2");
  });

  it("is 501 where the edge does not enforce access (no AUTH_SECRET), as its info.json", async () => {
    for (const path of ["/iiif/3/secret/manifest.json", "/iiif/3/secret/info.json"]) expect((await call(path)).status, path).toBe(501);
  });
});
