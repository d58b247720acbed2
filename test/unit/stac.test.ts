// STAC documents as mosaic sources: Items, ItemCollections and static catalogs as a publisher
// (or an attacker) writes them, hrefs resolved against each document's own location, the walk's
// bounds, and the assets and band names a request chooses.
import { describe, expect, it } from "vitest";
import { HttpError } from "../../shared/errors";
import { assetBandNames, DEFAULT_STAC_LIMITS, loadStac, resolveHref, selectAssets, type StacItem } from "../../shared/maps/stac";

/** The HttpError `f` throws (sync or async), failing the test when it throws nothing. */
async function errorOf(f: () => unknown): Promise<HttpError> {
  try {
    await f();
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    return e as HttpError;
  }
  throw new Error("expected an HttpError, nothing was thrown");
}

async function badRequestOf(f: () => unknown): Promise<string> {
  const e = await errorOf(f);
  expect(e.status).toBe(400);
  return e.message;
}

/** A valid Item as an object, with fields replaced (`undefined` removes one). */
function item(fields: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    type: "Feature",
    stac_version: "1.0.0",
    id: "scene-1",
    geometry: null,
    bbox: [14, 45, 15, 46],
    properties: { datetime: "2026-06-01T10:00:00Z", "proj:epsg": 32633 },
    links: [{ rel: "self", href: "./scene-1.json" }],
    assets: {
      B04: { href: "./B04.tif", "eo:bands": [{ name: "B04" }] },
      visual: { href: "visual.tif", "raster:bands": [{}, {}, {}] },
      thumbnail: { href: "https://cdn.example.org/thumb.png" },
    },
  };
  return Object.fromEntries(Object.entries({ ...base, ...fields }).filter(([, v]) => v !== undefined));
}

const text = (o: unknown) => JSON.stringify(o);
/** A loader that must not be called. */
const noLoad = async (href: string): Promise<string> => {
  throw new Error(`unexpected load of ${href}`);
};
/** A loader over a map of documents by resolved href, recording what it was asked. */
function loader(documents: Record<string, unknown>) {
  const asked: string[] = [];
  const load = async (href: string) => {
    asked.push(href);
    if (!Object.hasOwn(documents, href)) throw new HttpError("not_found", `no ${href}`);
    return text(documents[href]);
  };
  return { asked, load };
}

describe("loadStac: one Item", () => {
  it("reads id, bbox, assets resolved against the document's folder, band counts and the EPSG code", async () => {
    const [scene] = await loadStac(text(item()), "scenes/2026/scene-1.json", noLoad);
    expect(scene).toEqual({
      id: "scene-1",
      bbox: [14, 45, 15, 46],
      epsg: 32633,
      assets: {
        B04: { href: "scenes/2026/B04.tif", bands: 1 },
        visual: { href: "scenes/2026/visual.tif", bands: 3 },
        thumbnail: { href: "https://cdn.example.org/thumb.png" },
      },
    });
  });
  it("reduces a 3D bbox, and resolves against a URL base as a browser does", async () => {
    const [scene] = await loadStac(text(item({ bbox: [14, 45, -10, 15, 46, 3000] })), "https://stac.example.org/c/items/scene-1.json", noLoad);
    expect(scene.bbox).toEqual([14, 45, 15, 46]);
    expect(scene.assets.B04.href).toBe("https://stac.example.org/c/items/B04.tif");
  });
  it("takes proj:code EPSG:n, then the assets' common code; another authority's code is none", async () => {
    const code = async (properties: unknown, assets?: unknown) => (await loadStac(text(item({ properties, ...(assets ? { assets } : {}) })), "i.json", noLoad))[0].epsg;
    expect(await code({ "proj:code": "EPSG:3857" })).toBe(3857);
    expect(await code({ "proj:code": "IAU_2015:30100" })).toBeUndefined();
    expect(await code({ "proj:epsg": null })).toBeUndefined();
    expect(await code({}, { a: { href: "a.tif", "proj:epsg": 32632 }, b: { href: "b.tif", "proj:code": "EPSG:32632" } })).toBe(32632);
    expect(await code({}, { a: { href: "a.tif", "proj:epsg": 32632 }, b: { href: "b.tif", "proj:epsg": 32633 } })).toBeUndefined();
    expect(await code(null)).toBeUndefined();
  });
  it("keeps asset keys named like Object's own members as assets, and finds nothing the Item lacks", async () => {
    const doc = text(item()).replace(`"assets":{`, `"assets":{"__proto__":{"href":"p.tif"},"constructor":{"href":"c.tif"},`);
    const [scene] = await loadStac(doc, "i.json", noLoad);
    expect(Object.keys(scene.assets)).toEqual(["__proto__", "constructor", "B04", "visual", "thumbnail"]);
    expect(selectAssets(scene, ["__proto__", "constructor"])).toEqual([{ key: "__proto__", href: "p.tif" }, { key: "constructor", href: "c.tif" }]);
    const [plain] = await loadStac(text(item()), "i.json", noLoad);
    expect(await badRequestOf(() => selectAssets(plain, ["constructor"]))).toMatch(/no asset "constructor"/);
    expect(await badRequestOf(() => selectAssets(plain, ["toString"]))).toMatch(/no asset "toString"/);
  });
  it("reads an Item across the antimeridian (west > east) as one box whose east edge is past 180°", async () => {
    const [read] = await loadStac(text(item({ bbox: [179, -17, -179, -16] })), "i.json", noLoad);
    expect(read.bbox).toEqual([179, -17, 181, -16]);
  });
});

describe("loadStac: an ItemCollection", () => {
  it("reads its Items in order, each asset resolved against the collection's location", async () => {
    const collection = { type: "FeatureCollection", features: [item(), item({ id: "scene-2", assets: { B04: { href: "../two/B04.tif" } } })] };
    const items = await loadStac(text(collection), "stac/one/scenes.json", noLoad);
    expect(items.map((i) => i.id)).toEqual(["scene-1", "scene-2"]);
    expect(items[1].assets.B04).toEqual({ href: "stac/two/B04.tif" });
  });

  // Each hostile feature list: [what it is, the features, a pattern the 400's message must match].
  const malformed: [string, unknown, RegExp][] = [
    ["features not a list", { a: item() }, /^features must be a list/],
    ["a feature not an object", [item(), 7], /^features\[1\]\.type must be "Feature"/],
    ["a feature of another type", [item({ type: "Catalog" })], /^features\[0\]\.type must be "Feature"/],
    ["no stac_version", [item({ stac_version: undefined })], /^features\[0\]\.stac_version must be a string/],
    ["a numeric id", [item(), item({ id: 12 })], /^features\[1\]\.id must be a string/],
    ["an empty id", [item({ id: "" })], /^features\[0\]\.id is empty/],
    ["no bbox", [item({ bbox: undefined })], /^features\[0\]\.bbox must be 4 or 6 numbers/],
    ["a bbox of 5", [item({ bbox: [1, 2, 3, 4, 5] })], /^features\[0\]\.bbox must be 4 or 6/],
    ["a string in bbox", [item({ bbox: [14, "45", 15, 46] })], /^features\[0\]\.bbox\[1\] must be a finite number/],
    ["a null in bbox (NaN written by JSON.stringify)", [item({ bbox: [14, 45, NaN, 46] })], /^features\[0\]\.bbox\[2\] must be a finite/],
    ["a longitude past 180", [item({ bbox: [14, 45, 181, 46] })], /^features\[0\]\.bbox longitudes/],
    ["a latitude past 90", [item({ bbox: [14, -91, 15, 46] })], /^features\[0\]\.bbox latitudes/],
    ["south above north", [item({ bbox: [14, 46, 15, 45] })], /^features\[0\]\.bbox must have south < north/],
    ["a zero-width bbox", [item({ bbox: [14, 45, 14, 46] })], /^features\[0\]\.bbox must have west ≠ east/],
    ["properties a list", [item({ properties: [] })], /^features\[0\]\.properties must be an object/],
    ["a string proj:epsg", [item({ properties: { "proj:epsg": "32633" } })], /^features\[0\]\.properties\["proj:epsg"\] must be/],
    ["a fractional proj:epsg", [item({ properties: { "proj:epsg": 326.33 } })], /proj:epsg/],
    ["a numeric proj:code", [item({ properties: { "proj:code": 32633 } })], /^features\[0\]\.properties\["proj:code"\] must be a string/],
    ["no assets", [item({ assets: undefined })], /^features\[0\]\.assets must be an object/],
    ["assets a list", [item({ assets: [{ href: "a.tif" }] })], /^features\[0\]\.assets must be an object/],
    ["an asset a string", [item({ assets: { B04: "B04.tif" } })], /^features\[0\]\.assets\.B04 must be an object/],
    ["an href a number", [item(), item(), item(), item({ assets: { B04: { href: 4 } } })], /^features\[3\]\.assets\.B04\.href must be a string/],
    ["an href missing under a long key", [item({ assets: { ["K".repeat(5000)]: {} } })], /^features\[0\]\.assets\["K{40}…"\]\.href must be a string$/],
    ["an href missing", [item({ assets: { "B 04": { type: "image/tiff" } } })], /^features\[0\]\.assets\["B 04"\]\.href must be a string/],
    ["an empty href", [item({ assets: { B04: { href: "" } } })], /^features\[0\]\.assets\.B04\.href is empty/],
    ["a control character in an href", [item({ assets: { B04: { href: "B04\r\n.tif" } } })], /^features\[0\]\.assets\.B04\.href holds a control/],
    ["an href climbing out", [item({ assets: { B04: { href: "../../../x.tif" } } })], /^features\[0\]\.assets\.B04\.href: .*climbs above/],
    ["an href of 3000 characters", [item({ assets: { B04: { href: "x".repeat(3000) } } })], /^features\[0\]\.assets\.B04\.href is more than 2048/],
    ["eo:bands an object", [item({ assets: { B04: { href: "a.tif", "eo:bands": {} } } })], /^features\[0\]\.assets\.B04\["eo:bands"\] must be a non-empty list/],
    ["raster:bands empty", [item({ assets: { B04: { href: "a.tif", "raster:bands": [] } } })], /raster:bands/],
    ["an asset's proj:epsg a string", [item({ properties: {}, assets: { B04: { href: "a.tif", "proj:epsg": "x" } } })], /^features\[0\]\.assets\.B04\["proj:epsg"\]/],
    ["links not a list", [item({ links: {} })], /^features\[0\]\.links must be a list/],
    ["a link href a number", [item({ links: [{ rel: "self", href: 1 }] })], /^features\[0\]\.links\[0\]\.href must be a string/],
    ["a link without rel", [item({ links: [{ href: "x.json" }] })], /^features\[0\]\.links\[0\]\.rel must be a string/],
    ["a bbox only under __proto__", [item({ bbox: undefined })].map((f) => ({ ...f, ["__proto__"]: { bbox: [14, 45, 15, 46] } })), /bbox/],
  ];
  it.each(malformed)("refuses %s with a 400 naming the JSON path", async (_what, features, message) => {
    const body = JSON.stringify({ type: "FeatureCollection", features });
    expect(await badRequestOf(() => loadStac(body, "scenes.json", noLoad))).toMatch(message);
  });

  it("refuses what is not a STAC document", async () => {
    expect(await badRequestOf(() => loadStac("{\"type\": ", "x.json", noLoad))).toMatch(/not valid JSON/);
    expect(await badRequestOf(() => loadStac("[]", "x.json", noLoad))).toMatch(/JSON object/);
    expect(await badRequestOf(() => loadStac(text({ type: "Topology" }), "x.json", noLoad))).toMatch(/type must be "Feature", "FeatureCollection"/);
    expect(await badRequestOf(() => loadStac(text({ type: "Catalog", id: 3, links: [] }), "x.json", noLoad))).toMatch(/^id must be a string/);
  });
});

describe("loadStac: static catalogs", () => {
  const catalog = (id: string, links: { rel: string; href: unknown }[], type = "Catalog") => ({ type, stac_version: "1.0.0", id, description: id, links });

  it("follows child and item links depth-first, each href resolved against its own document", async () => {
    const { asked, load } = loader({
      "data/eu/catalog.json": catalog("eu", [
        { rel: "item", href: "./a/a.json" },
        { rel: "parent", href: "../catalog.json" },
        { rel: "item", href: "b.json" },
      ]),
      "data/eu/a/a.json": item({ id: "a", assets: { B04: { href: "./B04.tif" } } }),
      "data/eu/b.json": item({ id: "b", assets: { B04: { href: "../shared/B04.tif" } } }),
      "data/last.json": item({ id: "last" }),
    });
    const root = catalog("root", [
      { rel: "self", href: "./catalog.json" },
      { rel: "root", href: "./catalog.json" },
      { rel: "child", href: "eu/catalog.json" },
      { rel: "item", href: "last.json" },
      { rel: "license", href: "https://example.org/licence" },
    ]);
    const items = await loadStac(text(root), "data/catalog.json", load);
    expect(items.map((i) => i.id)).toEqual(["a", "b", "last"]);
    expect(items.map((i) => i.assets.B04.href)).toEqual(["data/eu/a/B04.tif", "data/shared/B04.tif", "data/B04.tif"]);
    expect(asked).toEqual(["data/eu/catalog.json", "data/eu/a/a.json", "data/eu/b.json", "data/last.json"]);
  });
  it("walks a Collection behind URLs, relative links resolved as URLs", async () => {
    const { asked, load } = loader({
      "https://stac.example.org/sentinel/items/x.json": item({ id: "x" }),
    });
    const collection = catalog("sentinel", [{ rel: "item", href: "items/x.json" }], "Collection");
    const items = await loadStac(text(collection), "https://stac.example.org/sentinel/collection.json", load);
    expect(items[0].assets.B04.href).toBe("https://stac.example.org/sentinel/items/B04.tif");
    expect(asked).toEqual(["https://stac.example.org/sentinel/items/x.json"]);
  });
  it("reads a document two catalogs link to once, where it is first reached", async () => {
    const { asked, load } = loader({
      "c1.json": catalog("c1", [{ rel: "item", href: "shared.json" }]),
      "c2.json": catalog("c2", [{ rel: "item", href: "./shared.json" }]),
      "shared.json": item({ id: "shared" }),
    });
    const items = await loadStac(text(catalog("root", [{ rel: "child", href: "c1.json" }, { rel: "child", href: "c2.json" }])), "root.json", load);
    expect(items.map((i) => i.id)).toEqual(["shared"]);
    expect(asked).toEqual(["c1.json", "shared.json", "c2.json"]);
  });
  it("refuses a catalog cycle, naming the document that links back", async () => {
    const { load } = loader({
      "b.json": catalog("b", [{ rel: "child", href: "c/c.json" }]),
      "c/c.json": catalog("c", [{ rel: "child", href: "../root.json" }]),
    });
    expect(await badRequestOf(() => loadStac(text(catalog("root", [{ rel: "child", href: "b.json" }])), "root.json", load))).toMatch(
      /^c\/c\.json: links lead back to "root\.json": a catalog cycle/,
    );
    expect(await badRequestOf(() => loadStac(text(catalog("self", [{ rel: "child", href: "./self.json" }])), "self.json", noLoad))).toMatch(/cycle/);
  });
  it("names the linked document a bad field is in", async () => {
    const { load } = loader({ "sub/cat.json": catalog("sub", [{ rel: "item", href: 7 }]) });
    expect(await badRequestOf(() => loadStac(text(catalog("root", [{ rel: "child", href: "sub/cat.json" }])), "root.json", load))).toBe(
      "sub/cat.json: links[0].href must be a string",
    );
  });
  // Resolving is not permission: hostile hrefs reach `load` and the Items as they resolve, and
  // the loader's access policy (here: a store that only knows its own keys) decides.
  it("hands hostile hrefs to the loader and the Items as resolved, for the access policy to refuse", async () => {
    const { asked, load } = loader({});
    const root = text(catalog("root", [{ rel: "child", href: "file:///etc/passwd" }]));
    expect((await errorOf(() => loadStac(root, "root.json", load))).status).toBe(404);
    expect(asked).toEqual(["file:///etc/passwd"]);
    const assets = { a: { href: "s3://someone-elses-bucket/x.tif" }, b: { href: "/top.tif" }, c: { href: "file:///etc/passwd" } };
    const [scene] = await loadStac(text(item({ assets })), "deep/in/item.json", noLoad);
    expect(Object.values(scene.assets).map((asset) => asset.href)).toEqual(["s3://someone-elses-bucket/x.tif", "top.tif", "file:///etc/passwd"]);
  });
  it("resolves only the links it follows: a parent link above the store's root is no error, a child link there is", async () => {
    const parent = text(catalog("root", [{ rel: "parent", href: "../../up.json" }]));
    expect(await loadStac(parent, "root.json", noLoad)).toEqual([]);
    expect(await loadStac(text(item({ links: [{ rel: "parent", href: "../up.json" }] })), "i.json", noLoad)).toHaveLength(1);
    const child = text(catalog("root", [{ rel: "self", href: "x" }, { rel: "child", href: "../../up.json" }]));
    expect(await badRequestOf(() => loadStac(child, "a/root.json", noLoad))).toMatch(/^links\[1\]\.href: .*climbs above/);
  });
  it("passes on the loader's own error for a missing document", async () => {
    const e = await errorOf(() => loadStac(text(catalog("root", [{ rel: "item", href: "gone.json" }])), "root.json", loader({}).load));
    expect(e.status).toBe(404);
  });

  /** A chain root → c1 → … → c{n-1} → item, each a catalog linking the next. */
  function chain(n: number) {
    const documents: Record<string, unknown> = { [`c${n}.json`]: item({ id: "deep" }) };
    for (let i = 1; i < n; i++) documents[`c${i}.json`] = catalog(`c${i}`, [{ rel: "child", href: `c${i + 1}.json` }]);
    return { root: text(catalog("root", [{ rel: "child", href: "c1.json" }])), ...loader(documents) };
  }
  it("follows at most maxDepth links from the first document", async () => {
    const ok = chain(DEFAULT_STAC_LIMITS.maxDepth);
    expect((await loadStac(ok.root, "root.json", ok.load)).map((i) => i.id)).toEqual(["deep"]);
    const deep = chain(DEFAULT_STAC_LIMITS.maxDepth + 1);
    expect(await badRequestOf(() => loadStac(deep.root, "root.json", deep.load))).toMatch(/c4\.json: links to "c5\.json" go deeper than the 4 links allowed/);
    const lowered = chain(2);
    expect(await badRequestOf(() => loadStac(lowered.root, "root.json", lowered.load, { maxDepth: 1 }))).toMatch(/deeper than the 1/);
  });
  it("bounds the Items, the documents, each Item's assets and a document's bytes", async () => {
    const features = (n: number) => text({ type: "FeatureCollection", features: Array.from({ length: n }, (_, i) => item({ id: `s${i}` })) });
    expect(await loadStac(features(3), "x.json", noLoad, { maxItems: 3 })).toHaveLength(3);
    expect(await badRequestOf(() => loadStac(features(4), "x.json", noLoad, { maxItems: 3 }))).toMatch(/more than the 3 Items/);
    // Items counted across documents: two catalogs' Items together.
    const { load } = loader({ "a.json": item({ id: "a" }), "b.json": item({ id: "b" }) });
    const two = text(catalog("root", [{ rel: "item", href: "a.json" }, { rel: "item", href: "b.json" }]));
    expect(await badRequestOf(() => loadStac(two, "root.json", load, { maxItems: 1 }))).toMatch(/more than the 1 Items/);
    // Empty catalogs bring no Items but still cost a load each.
    const empties = loader(Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`e${i}.json`, catalog(`e${i}`, [])])));
    const wide = text(catalog("root", Array.from({ length: 5 }, (_, i) => ({ rel: "child", href: `e${i}.json` }))));
    expect(await badRequestOf(() => loadStac(wide, "root.json", empties.load, { maxDocuments: 4 }))).toMatch(/more than the 4 documents/);
    expect(empties.asked).toHaveLength(4);
    const assets = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`a${i}`, { href: `a${i}.tif` }]));
    expect(await badRequestOf(() => loadStac(text(item({ assets })), "x.json", noLoad))).toMatch(/^assets has 65 assets, more than the 64/);
    const big = text(item({ title: "x".repeat(DEFAULT_STAC_LIMITS.maxBytes) }));
    expect(await badRequestOf(() => loadStac(big, "x.json", noLoad))).toMatch(/more than the 8388608 bytes/);
    // Bytes, not characters: 3-byte characters fill the limit three times as fast.
    const wide3 = text(item({ title: "€".repeat(400) }));
    expect(await badRequestOf(() => loadStac(wide3, "x.json", noLoad, { maxBytes: wide3.length + 100 }))).toMatch(/bytes/);
  });
});

describe("resolveHref", () => {
  it("joins a relative href to a store key's folder, POSIX-style", () => {
    expect(resolveHref("a/b/item.json", "./B04.tif")).toBe("a/b/B04.tif");
    expect(resolveHref("a/b/item.json", "c/./d//B04.tif")).toBe("a/b/c/d/B04.tif");
    expect(resolveHref("a/b/item.json", "../B04.tif")).toBe("a/B04.tif");
    expect(resolveHref("item.json", "B04.tif")).toBe("B04.tif");
  });
  it("resolves against a URL base as a URL, and leaves absolute URLs as they are", () => {
    expect(resolveHref("https://h.example/a/b/item.json", "../B04.tif")).toBe("https://h.example/a/B04.tif");
    expect(resolveHref("https://h.example/a/item.json", "/root.tif")).toBe("https://h.example/root.tif");
    expect(resolveHref("a/item.json", "http://other.example/x.tif")).toBe("http://other.example/x.tif");
    expect(resolveHref("s3://bucket/cat/item.json", "B04.tif")).toBe("s3://bucket/cat/B04.tif");
  });
  // resolveHref only resolves: these all resolve to something, and what may be read is the
  // access policy's decision (the store's root, the allowed URL hosts), not this function's.
  it("resolves hostile hrefs without judging them, except a climb above the store's root", () => {
    expect(() => resolveHref("a/item.json", "../../x")).toThrow(/climbs above the store's root/);
    expect(() => resolveHref("item.json", "sub/../../x")).toThrow(/climbs above/);
    expect(resolveHref("a/b/item.json", "/etc/passwd")).toBe("etc/passwd"); // a key from the store's root, not the file system's
    expect(resolveHref("a/item.json", "file:///etc/passwd")).toBe("file:///etc/passwd");
    expect(resolveHref("a/item.json", "s3://someone-elses-bucket/x.tif")).toBe("s3://someone-elses-bucket/x.tif");
    expect(resolveHref("https://h.example/a/item.json", "../../../../x")).toBe("https://h.example/x"); // a URL's path stops at its root
    expect(resolveHref("https://h.example/a/item.json", "//evil.example/x")).toBe("https://evil.example/x");
    for (const folder of ["./", "..", "x/.", "/"]) expect(() => resolveHref("a/b/item.json", folder)).toThrow(/names a folder/);
  });
});

describe("selectAssets and assetBandNames", () => {
  const scene: StacItem = {
    id: "scene-1",
    bbox: [14, 45, 15, 46],
    assets: Object.assign(Object.create(null), {
      B04: { href: "B04.tif", bands: 1 },
      B08: { href: "B08.tif" },
      visual: { href: "visual.tif", bands: 3 },
      raw: { href: "raw.tif" },
    }),
  };
  it("chooses assets in the order asked", () => {
    expect(selectAssets(scene, ["visual", "B04"])).toEqual([{ key: "visual", href: "visual.tif" }, { key: "B04", href: "B04.tif" }]);
  });
  it("refuses no assets, an unknown key naming the item and key, and a repeat", async () => {
    expect(await badRequestOf(() => selectAssets(scene, undefined))).toMatch(/a STAC source needs assets=/);
    expect(await badRequestOf(() => selectAssets(scene, []))).toMatch(/a STAC source needs assets=/);
    expect(await badRequestOf(() => selectAssets(scene, ["B04", "B05"]))).toBe(`item "scene-1" has no asset "B05"`);
    expect(await badRequestOf(() => selectAssets(scene, ["B04", "B04"]))).toMatch(/"B04" twice/);
  });
  it("names a single-band asset's band by its key and a multi-band asset's bands key_bN", () => {
    expect(assetBandNames(scene, ["B08", "visual", "B04"])).toEqual([
      { name: "B08", key: "B08", href: "B08.tif", band: 1 },
      { name: "visual_b1", key: "visual", href: "visual.tif", band: 1 },
      { name: "visual_b2", key: "visual", href: "visual.tif", band: 2 },
      { name: "visual_b3", key: "visual", href: "visual.tif", band: 3 },
      { name: "B04", key: "B04", href: "B04.tif", band: 1 },
    ]);
  });
  it("reads the bands asset_bidx names, in its order", () => {
    expect(assetBandNames(scene, ["visual", "raw"], { visual: [3, 1], raw: [2] }).map((b) => [b.name, b.band])).toEqual([
      ["visual_b3", 3],
      ["visual_b1", 1],
      ["raw_b2", 2], // the Item does not say raw's count: asset_bidx reads it as multi-band
    ]);
    expect(assetBandNames(scene, ["B04"], { B04: [1] }).map((b) => b.name)).toEqual(["B04"]);
  });
  it("refuses asset_bidx past the Item's count, of an asset not chosen, repeated or empty, and clashing names", async () => {
    expect(await badRequestOf(() => assetBandNames(scene, ["visual"], { visual: [4] }))).toMatch(/band 4 is not one of the asset's bands \(1–3\)/);
    expect(await badRequestOf(() => assetBandNames(scene, ["B04"], { B04: [2] }))).toMatch(/band 2/);
    expect(await badRequestOf(() => assetBandNames(scene, ["raw"], { raw: [0] }))).toMatch(/band 0/);
    expect(await badRequestOf(() => assetBandNames(scene, ["B04"], { visual: [1] }))).toMatch(/asset_bidx names "visual", which assets= does not select/);
    expect(await badRequestOf(() => assetBandNames(scene, ["visual"], { visual: [1, 1] }))).toMatch(/band 1 twice/);
    expect(await badRequestOf(() => assetBandNames(scene, ["visual"], { visual: [] }))).toMatch(/lists no band/);
    const clash: StacItem = { ...scene, assets: Object.assign(Object.create(null), { v: { href: "v.tif", bands: 2 }, v_b1: { href: "x.tif" } }) };
    expect(await badRequestOf(() => assetBandNames(clash, ["v", "v_b1"]))).toMatch(/"v_b1" is given by two assets/);
  });
});
