// Styles: every style query parameter's good and bad forms (400s naming the parameter), the
// canonical form every spelling shares, the Raster Style document (each bad field named by its
// path, hostile JSON), the query's precedence over a document, and the colouring after
// reduction against pixel values computed here independently.
import { rgb } from "d3-color";
import { interpolateViridis } from "d3-scale-chromatic";
import fc from "fast-check";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { rampTable } from "../../regional/maps/colorize";
import { encodeTile } from "../../regional/maps/render-tile";
import { Slices } from "../../regional/runtime/slices";
import { badRequestMessage } from "../support/bad-request";
import { expressionNodes, formatExpressions, MAX_EXPRESSION_LENGTH, MAX_EXPRESSION_NODES, parseExpressions, type ExpressionNode } from "../../shared/maps/expression";
import { COLORMAP_NAMES, MAX_STYLE_DOCUMENT_LENGTH, parseStyleDocument, withStyleDocument } from "../../shared/maps/style";
import { canonicalTile, parseTileRequest, type TileRequest } from "../../shared/maps/tile-request";

const parse = (query: string, y = "0.png") => parseTileRequest({ tileMatrixSet: "WebMercatorQuad", z: "1", x: "0", y }, new URLSearchParams(query));
const canonical = (query: string, y?: string) => canonicalTile(parse(query, y));

const refusal = badRequestMessage;

describe("style query parameters: canonical form", () => {
  it("writes every style field once, in one order, defaults left out", () => {
    const colormap = encodeURIComponent('{"7":[1,2,3],"2":[4,5,6,7]}');
    expect(canonical(`opacity=0.5&colormap=${colormap}&gamma=1.5&rescale=0,9&rank_channel=2&pixel_selection=highest&expression=b1&stage=before_channels&nodata=0`)).toBe(
      `WebMercatorQuad/1/0/0.png?expression=b1&pixel_selection=highest&stage=before_channels&rank_channel=2&rescale=0,9&nodata=0&gamma=1.5&colormap=%7B%222%22%3A%5B4,5,6,7%5D,%227%22%3A%5B1,2,3,255%5D%7D&opacity=0.5`,
    );
  });

  it("gives every spelling of one tile one canonical form", () => {
    const spellings = [
      ["assets=B04,B03,B02&asset_bidx=B03|1&asset_bidx=B04|2", "asset_bidx=B04|2&assets=B04&assets=B03&assets=B02&asset_bidx=B03|1"],
      ["expression=b1 %2B b2", "expression=(b1)%2Bb2"],
      ["expression=(b1*b2)-(b3)", "expression=b1*b2-b3"],
      ["", "pixel_selection=first&stage=after_channels&gamma=1&opacity=1&resampling=nearest&calibration=none"],
      ["pixel_selection=highest", "pixel_selection=highest&rank_channel=1"],
      ["colormap_name=viridis&rescale=0,10&bidx=1", "bidx=1&rescale=0,10&colormap_name=viridis"],
    ];
    for (const [a, b] of spellings) expect(canonical(b), b).toBe(canonical(a));
    expect(canonical("opacity=0.5", "0.webp")).toBe("WebMercatorQuad/1/0/0.webp?opacity=0.5");
    expect(canonical("gamma=2", "0.jpeg")).toBe(canonical("gamma=2", "0.jpg"));
  });

  it("keeps the canonical query a query: + and & inside a value are escaped, and parse back to the same request", () => {
    const text = canonical(`expression=${encodeURIComponent("(B08-B04)/(B08+B04)")}&assets=B04,B08`);
    expect(text).toBe("WebMercatorQuad/1/0/0.png?assets=B04,B08&expression=(B08-B04)%2F(B08%2BB04)");
    expect(parse(text.split("?")[1]).expression).toBe("(B08-B04)/(B08+B04)");
  });

  it("keeps assets in the order given", () => {
    expect(parse("assets=c,a&assets=b").assets).toEqual(["c", "a", "b"]);
  });
});

describe("style query parameters: refusals name the parameter", () => {
  it.each([
    ["pixel_selection=best", "pixel_selection must be one of first, highest"],
    ["stage=after", "stage must be one of before_channels, after_channels"],
    ["pixel_selection=highest&rank_channel=0", "rank_channel must be a whole number from 1"],
    ["pixel_selection=highest&rank_channel=1.5", "rank_channel must be a"],
    ["rank_channel=2", "rank_channel applies to highest and lowest only, not first"],
    ["pixel_selection=mean&rank_channel=1", "rank_channel applies to highest and lowest only, not mean"],
    ["expression=b1 %2B", "expression at 5, expected a number"],
    ["expression=b1&bidx=1", "expression and bidx cannot be given together"],
    ["expression=b1;b2", "the request makes 2 channels"],
    ["expression=b1;b2;b3;b4", "the request makes 4 channels"],
    ["expression=b1;b2;b3&rescale=0,1&rescale=0,2", "rescale gives 2 ranges"],
    ["expression=b1;b2;b3&colormap_name=viridis", "a colormap applies to one channel, and the request makes 3"],
    ["bidx=1,2,3&pixel_selection=lastbandhigh", "the request makes 2 channels"],
    ["assets=a,b,a", "assets names an asset twice"],
    ["assets=a b", "assets[0] must be an asset key"],
    [`assets=${"a".repeat(65)}`, "assets[0] must be an asset key"],
    ["assets=__proto__", "assets[0] is a reserved name"],
    ["assets=a&asset_bidx=b|1", 'asset_bidx names asset "b", which is not in assets'],
    ["assets=a&asset_bidx=a", "asset_bidx \"a\" must be {asset}|{band}"],
    ["assets=a&asset_bidx=a|1&asset_bidx=a|2", 'asset_bidx names asset "a" twice'],
    ["assets=a&asset_bidx=a|0", 'asset_bidx["a"][0] must be a band number from 1'],
    ["assets=a&asset_bidx=__proto__|1", "asset_bidx has a key that is not an asset key"],
    ["colormap_name=jet", "colormap_name must be one of viridis"],
    ["colormap=viridis", "colormap must be JSON"],
    [`colormap=${encodeURIComponent('{"x":[1,2,3]}')}`, "colormap has a key that is not a whole number"],
    [`colormap=${encodeURIComponent('{"__proto__":[1,2,3]}')}`, "colormap has a key that is not a whole number"],
    // "007" would be a second spelling of 7: two entries for one value.
    [`colormap=${encodeURIComponent('{"7":[1,2,3],"007":[4,5,6]}')}`, "colormap has a key that is not a whole number"],
    [`colormap=${encodeURIComponent('{"1":[1,2]}')}`, 'colormap["1"] must be a colour of 3 or 4 components'],
    [`colormap=${encodeURIComponent('{"1":[1,2,256]}')}`, 'colormap["1"][2] must be 0–255'],
    [`colormap=${encodeURIComponent("{}")}`, "colormap must have 1 to 256 entries"],
    [`colormap=${encodeURIComponent(JSON.stringify(Object.fromEntries(Array.from({ length: 257 }, (_, i) => [i, [0, 0, 0]]))))}`, "colormap must have 1 to 256 entries"],
    [`colormap=${encodeURIComponent("[[[5,5],[1,2,3]]]")}`, "colormap[0][0] must be [min, max] with min < max"],
    [`colormap=${encodeURIComponent("[[5,[1,2,3]]]")}`, "colormap[0][0] must be an interval [min, max]"],
    [`colormap=${encodeURIComponent('{"1":[1,2,3]}')}&colormap_name=viridis`, "colormap and colormap_name cannot be given together"],
    ["gamma=0", "gamma must be greater than 0"],
    ["gamma=10.5", "gamma must be at most 10"],
    ["gamma=abc", "gamma must be a number"],
    ["gamma=1&gamma=2", 'query parameter "gamma" is given 2 times'],
    [`gamma=2&colormap=${encodeURIComponent('{"1":[1,2,3]}')}`, "gamma applies to rescaled values"],
    ["opacity=1.5", "opacity must be 0–1"],
    ["opacity=nan", "opacity must be a number"],
    ["calibration=linear", "calibration other than none is not supported"],
    ["unscale=true", "unscale was removed"],
    ["style=a/b", 'style "a/b" must be a name'],
    [`style=${"s".repeat(65)}`, "style"],
    ["rescale=0,1&rescale=0,2", "rescale gives 2 ranges"],
    ["rescale=1,0", "rescale must be min,max with min < max"],
  ])("%s", (query, message) => {
    expect(refusal(() => parse(query))).toContain(message);
  });

  it("refuses opacity on jpg, which has no alpha", () => {
    expect(refusal(() => parse("opacity=0.5", "0.jpg"))).toContain("jpg has no alpha");
  });
});

describe("expressions written back canonically", () => {
  const name = fc.constantFrom("b1", "b2", "B08", "x_1");
  const number = fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.double({ min: 0, max: 1e30, noNaN: true }));
  const tree = fc.letrec<{ node: ExpressionNode }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      number.map((value): ExpressionNode => ({ kind: "number", value })),
      name.map((n): ExpressionNode => ({ kind: "band", name: n })),
      tie("node").map((operand): ExpressionNode => ({ kind: "negate", operand })),
      fc.record({ operator: fc.constantFrom("+", "-", "*", "/" as const), left: tie("node"), right: tie("node") }).map((b): ExpressionNode => ({ kind: "binary", ...b })),
      fc.array(tie("node"), { minLength: 2, maxLength: 3 }).map((args): ExpressionNode => ({ kind: "call", name: "max", args })),
      tie("node").map((arg): ExpressionNode => ({ kind: "call", name: "sqrt", args: [arg] })),
    ),
  }));

  it("parses the formatted text back to the same tree, and formats that to the same text", () => {
    fc.assert(
      fc.property(fc.array(tree.node, { minLength: 1, maxLength: 3 }), (channels) => {
        const text = formatExpressions({ channels });
        // What the parser takes: within its length and node cap, reading some band.
        fc.pre(text.length <= MAX_EXPRESSION_LENGTH && expressionNodes({ channels }) <= MAX_EXPRESSION_NODES && /\b(b1|b2|B08|x_1)\b/.test(text));
        const again = parseExpressions(text, "any");
        expect(again.channels).toEqual(channels);
        expect(formatExpressions(again)).toBe(text);
        expect(text).not.toMatch(/\s/);
      }),
      { numRuns: 500 },
    );
  });

  it("writes only the parentheses the tree needs", () => {
    const format = (text: string) => formatExpressions(parseExpressions(text, "any"));
    expect(format("((b1 + b2)) * (b3)")).toBe("(b1+b2)*b3");
    expect(format("b1 - (b2 - b3) ; b1 - b2 - b3")).toBe("b1-(b2-b3);b1-b2-b3");
    expect(format("-(b1) * - (b2 / 2)")).toBe("-b1*-(b2/2)");
    expect(format("max( b1 , 1e-3 )")).toBe("max(b1,0.001)");
  });
});

const NDVI = JSON.stringify({
  name: "NDVI",
  description: "normalised difference vegetation index",
  assets: ["B04", "B08"],
  expression: "(B08 - B04) / (B08 + B04)",
  pixel_selection: "highest",
  rank_channel: 1,
  rescale: [[-1, 1]],
  colormap_name: "rdylgn",
  resampling: "bilinear",
  nodata: 0,
  calibration: "none",
});

describe("the Raster Style document", () => {
  it("reads every field in its natural JSON type", () => {
    expect(parseStyleDocument(NDVI, "ndvi")).toEqual({
      assets: ["B04", "B08"],
      expression: "(B08-B04)/(B08+B04)",
      pixelSelection: "highest",
      rankChannel: 1,
      rescale: [[-1, 1]],
      colormapName: "rdylgn",
      resampling: "bilinear",
      nodata: 0,
    });
    const rgbDoc = parseStyleDocument(
      JSON.stringify({ assets: ["visual"], asset_bidx: { visual: [1, 2, 3] }, gamma: 1.5, opacity: 0.8, stage: "before_channels", nodata: "nan" }),
      "rgb",
    );
    expect(rgbDoc).toMatchObject({ assetBidx: [["visual", [1, 2, 3]]], gamma: 1.5, opacity: 0.8, stage: "before_channels" });
    expect(rgbDoc.nodata).toBeNaN();
    expect(parseStyleDocument('{"colormap": {"-1": [0, 0, 0, 0], "10": [1, 2, 3]}}', "classes").colormap).toEqual({
      kind: "explicit",
      entries: [[-1, [0, 0, 0, 0]], [10, [1, 2, 3, 255]]],
    });
    expect(parseStyleDocument('{"colormap": [[[0, 100], [0, 0, 255]]], "bidx": [1]}', "dem").colormap).toEqual({ kind: "intervals", entries: [[[0, 100], [0, 0, 255, 255]]] });
  });

  it.each([
    ['{"rescale": [[0, "3000"]]}', 'style "ndvi": rescale[0][1] must be a number'],
    ['{"rescale": [[0, 3000, 5]]}', 'style "ndvi": rescale[0][2] must be min,max'],
    ['{"gamma": 0}', 'style "ndvi": gamma must be greater than 0'],
    ['{"gamma": "2"}', 'style "ndvi": gamma must be a number'],
    ['{"bidx": [1, 0, 2]}', 'style "ndvi": bidx[1] must be a band number from 1'],
    ['{"assets": ["a"], "asset_bidx": {"a": [1, "2"]}}', 'style "ndvi": asset_bidx["a"][1] must be a band number'],
    ['{"colormap": {"3": [0, 0, 300]}}', 'style "ndvi": colormap["3"][2] must be 0–255'],
    ['{"colormap": [[[0, 1], [0, 0]]]}', 'style "ndvi": colormap[0][1] must be a colour of 3 or 4 components'],
    ['{"expression": "B08 -"}', 'style "ndvi": expression at 6, expected a number'],
    ['{"expression": "b1", "bidx": [1]}', 'style "ndvi": expression and bidx cannot be given together'],
    ['{"pixel_selection": "lowest", "rank_channel": "2"}', 'style "ndvi": rank_channel must be a number'],
    ['{"calibration": "linear"}', 'style "ndvi": calibration other than none is not supported'],
    ['{"colour": "red"}', 'style "ndvi": unknown field "colour"'],
    ['{"unscale": true}', 'style "ndvi": unknown field "unscale"'],
    ['{"__proto__": {"gamma": 2}}', 'style "ndvi": unknown field "__proto__"'],
    ['{"constructor": 1}', 'style "ndvi": unknown field "constructor"'],
    ['{"colormap": {"constructor": [1, 2, 3]}}', 'style "ndvi": colormap has a key that is not a whole number'],
    ['{"name": 5}', 'style "ndvi": name must be a string'],
    ["[1, 2]", 'style "ndvi": the document must be a JSON object'],
    ["null", 'style "ndvi": the document must be a JSON object'],
    ['{"colormap": [1, 2]}', 'style "ndvi": colormap[0] must be [[min, max], [r, g, b, a]]'],
    ['{"asset_bidx": [[1]]}', 'style "ndvi": asset_bidx must be an object of asset keys to band lists'],
    ['{"gamma": 1', 'style "ndvi": the document is not JSON'],
  ])("refuses %s", (text, message) => {
    expect(refusal(() => parseStyleDocument(text, "ndvi"))).toContain(message);
  });

  it("refuses deep nesting within the size bound as a 400 naming where, not a stack overflow", () => {
    const deep = `{"rescale": ${"[".repeat(30_000)}${"]".repeat(30_000)}}`;
    expect(deep.length).toBeLessThan(MAX_STYLE_DOCUMENT_LENGTH);
    expect(refusal(() => parseStyleDocument(deep, "ndvi"))).toContain('style "ndvi": rescale[0][0] must be a number');
  });

  it("refuses a document over 64 KiB before parsing it", () => {
    const text = JSON.stringify({ description: "x".repeat(MAX_STYLE_DOCUMENT_LENGTH) });
    expect(refusal(() => parseStyleDocument(text, "big"))).toContain(`more than ${MAX_STYLE_DOCUMENT_LENGTH}`);
    expect(parseStyleDocument(JSON.stringify({ description: "x".repeat(MAX_STYLE_DOCUMENT_LENGTH - 20) }), "fits")).toEqual({});
  });

  it("checks a field with the same rule as the query", () => {
    const query = refusal(() => parse("gamma=11"));
    const doc = refusal(() => parseStyleDocument('{"gamma": 11}', "g"));
    expect(doc).toBe(`style "g": ${query}`);
  });
});

describe("a style document with a query", () => {
  const styled = (query: string) => withStyleDocument(parse(`style=ndvi&${query}`), parseStyleDocument(NDVI, "ndvi"));

  it("takes the document's fields, the query's where it gave them (default values too), and is then canonical", () => {
    const req = parse("style=ndvi&rescale=-0.5,0.5&resampling=nearest");
    expect(req.styleName).toBe("ndvi");
    expect(() => canonicalTile(req)).toThrow(/must be resolved/);
    const merged = withStyleDocument(req, parseStyleDocument(NDVI, "ndvi"));
    expect(merged.styleName).toBeUndefined();
    expect(canonicalTile(merged)).toBe(
      "WebMercatorQuad/1/0/0.png?assets=B04,B08&expression=(B08-B04)%2F(B08%2BB04)&pixel_selection=highest&rescale=-0.5,0.5&nodata=0&colormap_name=rdylgn",
    );
    // Without the query's resampling the document's applies.
    expect(styled("").resampling).toBe("bilinear");
  });

  it("checks the rules across fields on the merge, not on the query alone", () => {
    // rank_channel needs highest or lowest, which the document gives.
    expect(styled("rank_channel=1").rankChannel).toBe(1);
    expect(refusal(() => withStyleDocument(parse("style=ndvi&opacity=0.5", "0.jpg"), parseStyleDocument(NDVI, "ndvi")))).toContain("jpg has no alpha");
  });

  it("checks the merge by the query's rules", () => {
    expect(refusal(() => styled("bidx=1"))).toContain("expression and bidx cannot be given together");
    expect(refusal(() => styled("colormap=" + encodeURIComponent('{"1":[1,2,3]}')))).toContain("colormap and colormap_name");
    expect(refusal(() => styled("pixel_selection=mean"))).toContain("rank_channel applies to highest and lowest only, not mean");
  });
});

// ---- Colouring after reduction.

const plane = (values: number[]) => Float32Array.from(values);
const validity = (values: number[]) => Uint8Array.from(values);

/** Renders one row of channels with the tile query, and returns the decoded pixels and their channel count. */
async function render(planes: number[][], query: string, ranges: [number, number][] | undefined, valid?: number[][], y = "0.png") {
  const width = planes[0].length;
  const req: TileRequest = parse(query, y);
  const tile = { width, height: 1, bands: planes.map(plane), valid: planes.map((c, i) => validity(valid?.[i] ?? c.map(() => 1))) };
  const { body } = await encodeTile(tile, req, ranges, new Slices(new AbortController().signal));
  // Decoded with alpha where the format has it (a tile opaque everywhere comes without): a grey tile's is grey and alpha.
  const image = req.format === "jpg" ? sharp(body) : sharp(body).ensureAlpha();
  const { data, info } = await image.raw().toBuffer({ resolveWithObject: true });
  const { channels } = await sharp(body).metadata();
  return { pixels: Array.from({ length: width }, (_, i) => Array.from(data.subarray(i * info.channels, (i + 1) * info.channels))), channels };
}

const level = (v: number, min: number, max: number) => Math.min(255, Math.max(0, Math.round(((v - min) / (max - min)) * 255)));

describe("colouring after reduction", () => {
  it("rescales each channel over its own range into RGB", async () => {
    const { pixels } = await render([[0, 50, 100], [0, 100, 200], [100, 200, 400]], "rescale=0,100&rescale=0,200&rescale=100,300", [[0, 100], [0, 200], [100, 300]]);
    expect(pixels).toEqual([
      [0, 0, 0, 255],
      [level(50, 0, 100), level(100, 0, 200), level(200, 100, 300), 255],
      [255, 255, 255, 255],
    ]);
  });

  it("brightens with gamma > 1: out = v^(1/gamma) on the 0–1 value", async () => {
    const { pixels, channels } = await render([[25, 50, 100]], "rescale=0,100&gamma=2", [[0, 100]]);
    expect(channels).toBe(1); // grey, opaque everywhere: no alpha
    expect(pixels.map(([g]) => g)).toEqual([Math.round(255 * Math.sqrt(0.25)), Math.round(255 * Math.sqrt(0.5)), 255]);
  });

  it("colours an explicit map by the rescaled value: unlisted values transparent, a colour's alpha multiplies", async () => {
    const colormap = encodeURIComponent('{"1":[255,0,0],"2":[0,255,0,128]}');
    const { pixels } = await render([[1, 2, 3]], `colormap=${colormap}&rescale=0,255`, [[0, 255]]);
    expect(pixels).toEqual([
      [255, 0, 0, 255],
      [0, 255, 0, 128],
      [0, 0, 0, 0],
    ]);
  });

  it("colours intervals [min, max) on raw values when no rescale is given, the later interval winning an overlap", async () => {
    const colormap = encodeURIComponent(JSON.stringify([[[0, 100], [255, 0, 0]], [[100, 500], [0, 0, 255]], [[400, 450], [0, 255, 0]]]));
    const { pixels } = await render([[-5, 50, 100, 420, 1000]], `colormap=${colormap}`, undefined);
    expect(pixels).toEqual([
      [0, 0, 0, 0],
      [255, 0, 0, 255],
      [0, 0, 255, 255],
      [0, 255, 0, 255],
      [0, 0, 0, 0],
    ]);
  });

  it("indexes a named ramp by the 0–255 value: its ends and middle are the library's colours", async () => {
    const { pixels } = await render([[0, 128, 255]], "colormap_name=viridis&rescale=0,255", [[0, 255]]);
    const expected = [0, 128 / 255, 1].map((t) => {
      const c = rgb(interpolateViridis(t));
      return [Math.round(c.r), Math.round(c.g), Math.round(c.b), 255];
    });
    expect(pixels).toEqual(expected);
    expect(expected[0]).toEqual([68, 1, 84, 255]); // viridis starts dark purple, #440154
  });

  it("has a ramp for every name the edge accepts", () => {
    for (const name of COLORMAP_NAMES) {
      const table = rampTable(name);
      expect(table.length, name).toBe(1024);
      expect(Array.from(table.subarray(0, 4)), name).not.toEqual(Array.from(table.subarray(1020)));
    }
  });

  it("multiplies alpha by opacity, a colour's alpha too", async () => {
    const colormap = encodeURIComponent('{"1":[9,9,9],"2":[9,9,9,128]}');
    const { pixels } = await render([[1, 2]], `colormap=${colormap}&rescale=0,255&opacity=0.5`, [[0, 255]]);
    expect(pixels.map((p) => p[3])).toEqual([Math.round(255 * 0.5), Math.round(128 * 0.5)]);
  });

  it("leaves a pixel some channel lacks transparent in png and black in jpg", async () => {
    const values = [[200, 200, 200, 200], [200, 200, 200, 200], [200, 200, 200, 200]];
    const valid = [[1, 0, 1, 1], [1, 1, 1, 0], [1, 1, 1, 1]];
    const png = await render(values, "rescale=0,200", [[0, 200], [0, 200], [0, 200]], valid);
    expect(png.pixels).toEqual([[255, 255, 255, 255], [0, 0, 0, 0], [255, 255, 255, 255], [0, 0, 0, 0]]);
    // One 8×8 JPEG block wide: the invalid half is black (within JPEG's rounding), the valid half white.
    const wide = (row: number[]) => row.flatMap((v) => Array(4).fill(v));
    const jpg = await render(values.map(wide), "rescale=0,200", [[0, 200], [0, 200], [0, 200]], [[1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]].map(wide), "0.jpg");
    expect(jpg.channels).toBe(3);
    expect(Math.max(...jpg.pixels.slice(10).flat())).toBeLessThan(16);
    expect(Math.min(...jpg.pixels.slice(0, 6).flat())).toBeGreaterThan(239);
  });

  it("refuses 2 or 4 channels, naming how many the request makes", async () => {
    await expect(render([[1], [2]], "rescale=0,1", [[0, 1], [0, 1]])).rejects.toThrow("the request makes 2 channels");
    await expect(render([[1], [2], [3], [4]], "rescale=0,1", [[0, 1], [0, 1], [0, 1], [0, 1]])).rejects.toThrow("the request makes 4 channels");
    await expect(render([[1], [2], [3]], "colormap_name=viridis&rescale=0,1", [[0, 1], [0, 1], [0, 1]])).rejects.toThrow("a colormap applies to one channel");
  });
});
