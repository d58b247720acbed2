// MosaicJSON 0.0.3 as both tiers read it: quadkeys, the document as a publisher (or an attacker)
// writes it, and which assets a tile paints, in which order.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_MOSAIC_LIMITS, mosaicAssets, parseMosaicJson, quadkeyToTile, tileToQuadkey } from "../../shared/maps/mosaic-json";
import { HttpError } from "../../shared/errors";

/** Runs `f` and returns the 400 it throws, failing the test on anything else. */
function badRequestOf(f: () => unknown): HttpError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    expect((e as HttpError).status).toBe(400);
    return e as HttpError;
  }
  throw new Error("expected a 400, nothing was thrown");
}

describe("quadkeys", () => {
  it("follow Bing's rule: y bit then x bit per zoom, most significant first", () => {
    expect(tileToQuadkey(3, 3, 5)).toBe("213"); // Bing Maps Tile System's own example
    expect(tileToQuadkey(0, 0, 0)).toBe("");
    expect(tileToQuadkey(1, 1, 0)).toBe("1");
    expect(tileToQuadkey(1, 0, 1)).toBe("2");
    expect(tileToQuadkey(2, 3, 3)).toBe("33");
    expect(tileToQuadkey(30, 2 ** 30 - 1, 0)).toBe("1".repeat(30));
  });
  it("convert back to the same tile", () => {
    expect(quadkeyToTile("213")).toEqual({ z: 3, x: 3, y: 5 });
    expect(quadkeyToTile("")).toEqual({ z: 0, x: 0, y: 0 });
    expect(quadkeyToTile("3".repeat(30))).toEqual({ z: 30, x: 2 ** 30 - 1, y: 2 ** 30 - 1 });
    for (const [z, x, y] of [[5, 17, 9], [12, 2219, 1427], [24, 123456, 7654321]]) {
      expect(quadkeyToTile(tileToQuadkey(z, x, y))).toEqual({ z, x, y });
    }
  });
  it("refuse tiles outside the matrix and keys that are not quadkeys", () => {
    expect(badRequestOf(() => tileToQuadkey(2, 4, 0)).message).toMatch(/x/);
    expect(badRequestOf(() => tileToQuadkey(2, 0, -1)).message).toMatch(/y/);
    expect(badRequestOf(() => tileToQuadkey(31, 0, 0)).message).toMatch(/zoom/);
    expect(badRequestOf(() => tileToQuadkey(1.5, 0, 0)).message).toMatch(/zoom/);
    expect(badRequestOf(() => quadkeyToTile("0124")).message).toMatch(/quadkey/);
    expect(badRequestOf(() => quadkeyToTile("0".repeat(31))).message).toMatch(/quadkey/);
  });
});

/** A valid 0.0.3 document's JSON text, with fields replaced (`undefined` removes one). */
function doc(fields: Record<string, unknown> = {}): string {
  const base: Record<string, unknown> = {
    mosaicjson: "0.0.3",
    minzoom: 2,
    maxzoom: 6,
    quadkey_zoom: 3,
    bounds: [-10, -20, 30, 40],
    tiles: { "120": ["a.tif", "b.tif"], "021": ["c.tif"] },
  };
  return JSON.stringify({ ...base, ...fields });
}

describe("parseMosaicJson", () => {
  it("reads bounds across 180° (west > east) as one box whose east edge is past it", () => {
    expect(parseMosaicJson(doc({ bounds: [170, -5, -170, 5] })).bounds).toEqual([170, -5, 190, 5]);
  });

  it("reads the index: zooms, bounds, quadkeys sorted, each key's assets in listed order", () => {
    const m = parseMosaicJson(doc({ name: "city", center: [0, 0, 3], tiles: { "120": ["b.tif", "a.tif", "b.tif"], "021": ["c.tif"] } }));
    expect(m).toMatchObject({ minzoom: 2, maxzoom: 6, quadkeyZoom: 3, bounds: [-10, -20, 30, 40], assetPrefix: "" });
    expect(m.quadkeys).toEqual(["021", "120"]);
    expect(m.assets.get("120")).toEqual(["b.tif", "a.tif"]); // a repeat within a key keeps its first place
  });
  it("defaults quadkey_zoom to minzoom, and reads a zoom-0 index (the one empty quadkey)", () => {
    expect(parseMosaicJson(doc({ quadkey_zoom: undefined, tiles: { "01": ["a.tif"] } })).quadkeyZoom).toBe(2);
    const world = parseMosaicJson(doc({ minzoom: 0, quadkey_zoom: 0, tiles: { "": ["w.tif"] } }));
    expect(world.quadkeys).toEqual([""]);
  });
  it("keeps asset_prefix, which the lookup puts before every asset", () => {
    expect(parseMosaicJson(doc({ asset_prefix: "cogs/" })).assetPrefix).toBe("cogs/");
  });

  // Each hostile document: [what it is, JSON text, a pattern the 400's message must match].
  const hostile: [string, string, RegExp][] = [
    ["not JSON", "{\"mosaicjson\": ", /not valid JSON/],
    ["an array", "[]", /object/],
    ["null", "null", /object/],
    ["no version", doc({ mosaicjson: undefined }), /mosaicjson/],
    ["another version", doc({ mosaicjson: "0.0.2" }), /mosaicjson.*0\.0\.3/],
    ["a numeric version", doc({ mosaicjson: 3 }), /mosaicjson/],
    ["no minzoom", doc({ minzoom: undefined }), /minzoom/],
    ["a string zoom", doc({ minzoom: "2" }), /minzoom/],
    ["a NaN zoom (as a string)", doc({ maxzoom: "NaN" }), /maxzoom/],
    ["an infinite zoom", doc().replace(`"maxzoom":6`, `"maxzoom":1e400`), /maxzoom/],
    ["a fractional zoom", doc({ minzoom: 2.5 }), /minzoom/],
    ["a negative zoom", doc({ minzoom: -1 }), /minzoom/],
    ["a zoom past 30", doc({ maxzoom: 31 }), /maxzoom/],
    ["maxzoom below minzoom", doc({ minzoom: 4, maxzoom: 3 }), /maxzoom/],
    ["quadkey_zoom below minzoom", doc({ quadkey_zoom: 1 }), /quadkey_zoom/],
    ["quadkey_zoom past maxzoom", doc({ quadkey_zoom: 7 }), /quadkey_zoom/],
    ["a null quadkey_zoom", doc({ quadkey_zoom: null }), /quadkey_zoom/],
    ["no bounds", doc({ bounds: undefined }), /bounds/],
    ["three bounds", doc({ bounds: [0, 0, 1] }), /bounds/],
    ["a string in bounds", doc({ bounds: [0, 0, "1", 1] }), /bounds\[2\]/],
    ["a latitude past 90", doc({ bounds: [0, 0, 1, 91] }), /bounds\[3\]/],
    ["west at east", doc({ bounds: [10, 0, 10, 1] }), /bounds must have west ≠ east/],
    ["no tiles", doc({ tiles: undefined }), /tiles/],
    ["tiles as an array", doc({ tiles: [["a.tif"]] }), /tiles/],
    ["a key of other digits", doc({ tiles: { "124": ["a.tif"] } }), /tiles\["124"\]/],
    ["a key of letters", doc({ tiles: { abc: ["a.tif"] } }), /tiles\["abc"\]/],
    ["a key of another zoom", doc({ tiles: { "12": ["a.tif"] } }), /tiles\["12"\].*3/],
    ["keys of mixed lengths", doc({ tiles: { "120": ["a.tif"], "1200": ["b.tif"] } }), /tiles\["1200"\]/],
    ["a __proto__ key", doc().replace(`"tiles":{`, `"tiles":{"__proto__":["x.tif"],`), /tiles\["__proto__"\]/],
    ["a minzoom only under __proto__", doc({ minzoom: undefined }).replace("{", `{"__proto__":{"minzoom":2},`), /minzoom/],
    ["a constructor key", doc({ tiles: { constructor: ["a.tif"] } }), /tiles\["constructor"\]/],
    ["assets not a list", doc({ tiles: { "120": "a.tif" } }), /tiles\["120"\]/],
    ["a number as asset", doc({ tiles: { "120": ["a.tif", 7] } }), /tiles\["120"\]\[1\]/],
    ["an empty asset", doc({ tiles: { "120": ["a.tif", "b.tif", "c.tif", "d.tif", ""] } }), /tiles\["120"\]\[4\].*empty/],
    ["a control character in an asset", doc({ tiles: { "120": ["a\n.tif"] } }), /tiles\["120"\]\[0\]/],
    ["a huge asset", doc({ tiles: { "120": ["x".repeat(100_000)] } }), /tiles\["120"\]\[0\].*characters/],
    ["a non-string asset_prefix", doc({ asset_prefix: 1 }), /asset_prefix/],
    ["another tile matrix set", doc({ tilematrixset: { id: "NZTM2000Quad" } }), /tilematrixset/],
  ];
  it.each(hostile)("refuses %s with a 400 naming the field", (_what, text, message) => {
    expect(badRequestOf(() => parseMosaicJson(text)).message).toMatch(message);
  });

  it("bounds the work a document may ask for, by limits the caller may lower", () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [tileToQuadkey(3, i % 8, Math.floor(i / 8)), ["a.tif"]]));
    expect(parseMosaicJson(doc({ tiles: keys(64) }), { maxQuadkeys: 64 }).quadkeys).toHaveLength(64);
    expect(badRequestOf(() => parseMosaicJson(doc({ tiles: keys(64) }), { maxQuadkeys: 63 })).message).toMatch(/tiles.*64.*63/);
    const many = Array.from({ length: 1001 }, (_, i) => `${i}.tif`);
    expect(badRequestOf(() => parseMosaicJson(doc({ tiles: { "120": many } }))).message).toMatch(/tiles\["120"\].*1001.*1000/);
    expect(badRequestOf(() => parseMosaicJson(doc({ tiles: { "120": ["a", "b"], "121": ["c", "d"] } }), { maxTotalAssets: 3 })).message).toMatch(/tiles\["121"\].*3/);
    expect(badRequestOf(() => parseMosaicJson(doc({ asset_prefix: "p/" }), { maxAssetLength: 6 })).message).toMatch(/tiles\["021"\]\[0\] is 7 characters/);
    expect(badRequestOf(() => parseMosaicJson(doc(), { maxDocumentLength: 50 })).message).toMatch(/document.*50/);
  });
  it("defaults to at most 100 000 quadkeys and 1 000 assets a quadkey", () => {
    expect(DEFAULT_MOSAIC_LIMITS).toMatchObject({ maxQuadkeys: 100_000, maxAssetsPerQuadkey: 1000 });
  });
});

describe("mosaicAssets", () => {
  // Index at zoom 3 over zooms 1–6, its keys written out of lexical order on purpose; "03" (tile
  // 2/1/1) has three children in the index, sharing assets "a" and "x".
  const m = parseMosaicJson(
    doc({
      minzoom: 1,
      quadkey_zoom: 3,
      maxzoom: 6,
      asset_prefix: "",
      tiles: { "033": ["x", "a"], "030": ["a", "b"], "100": ["far"], "031": ["c", "a", "x"], "020": ["d"] },
    }),
  );
  const at = (quadkey: string) => {
    const { z, x, y } = quadkeyToTile(quadkey);
    return mosaicAssets(m, z, x, y);
  };

  it("at the index's zoom, paints the tile's own quadkey's list in its order", () => {
    expect(at("033")).toEqual(["x", "a"]);
    expect(at("031")).toEqual(["c", "a", "x"]);
  });
  it("finer than the index, paints its ancestor's list", () => {
    expect(at("0331")).toEqual(["x", "a"]);
    expect(at("031220")).toEqual(["c", "a", "x"]); // zoom 6, the maxzoom
  });
  it("coarser than the index, visits its descendants in lexical order, each asset where it first appears", () => {
    // 030 [a b], 031 [c a x], 033 [x a]: not the document's order (033 first), and "a", "x" once.
    expect(at("03")).toEqual(["a", "b", "c", "x"]);
    // Zoom 1: 020 [d] comes before the 03x keys; 100, outside "0", stays out.
    expect(at("0")).toEqual(["d", "a", "b", "c", "x"]);
  });
  it("paints nothing outside minzoom–maxzoom or where no quadkey matches", () => {
    expect(at("")).toEqual([]); // zoom 0 < minzoom 1, though every key lies under it
    expect(at("0331000")).toEqual([]); // zoom 7 > maxzoom 6
    expect(at("032")).toEqual([]);
    expect(at("2")).toEqual([]);
    expect(at("0321")).toEqual([]);
  });
  it("puts asset_prefix before every asset", () => {
    const prefixed = parseMosaicJson(doc({ asset_prefix: "cogs/" }));
    expect(mosaicAssets(prefixed, 2, 2, 1)).toEqual(["cogs/a.tif", "cogs/b.tif"]); // quadkey "12", above "120"
  });
  it("refuses a tile outside its zoom's matrix", () => {
    expect(badRequestOf(() => mosaicAssets(m, 3, 8, 0)).message).toMatch(/x 8/);
  });
  it("finds a sparse zoom-30 index's keys from zoom 0 without visiting 4^30 quadkeys", () => {
    const deep = parseMosaicJson(
      doc({ minzoom: 0, quadkey_zoom: 30, maxzoom: 30, tiles: { ["3".repeat(30)]: ["se"], ["0".repeat(30)]: ["nw"] } }),
    );
    expect(mosaicAssets(deep, 0, 0, 0)).toEqual(["nw", "se"]);
    expect(mosaicAssets(deep, 1, 1, 1)).toEqual(["se"]);
  });

  it("coarser than the index, equals its four children's lookups joined in order, first occurrences kept", () => {
    const index = fc.integer({ min: 1, max: 5 }).chain((zoom) =>
      fc.record({
        zoom: fc.constant(zoom),
        tiles: fc.dictionary(
          fc.string({ unit: fc.constantFrom("0", "1", "2", "3"), minLength: zoom, maxLength: zoom }),
          fc.array(fc.constantFrom("a", "b", "c", "d", "e", "f"), { maxLength: 6 }), // few names: many repeats
          { maxKeys: 40 },
        ),
        // A tile above the index's zoom: a prefix of some quadkey.
        tile: fc.string({ unit: fc.constantFrom("0", "1", "2", "3"), maxLength: zoom - 1 }),
      }),
    );
    fc.assert(
      fc.property(index, ({ zoom, tiles, tile }) => {
        const mosaic = parseMosaicJson(doc({ minzoom: 0, quadkey_zoom: zoom, maxzoom: zoom, tiles }));
        const lookup = (quadkey: string) => {
          const { z, x, y } = quadkeyToTile(quadkey);
          return mosaicAssets(mosaic, z, x, y);
        };
        const children = ["0", "1", "2", "3"].flatMap((digit) => lookup(tile + digit));
        expect(lookup(tile)).toEqual([...new Set(children)]);
      }),
    );
  });
});
