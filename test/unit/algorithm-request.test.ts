// `algorithm=` and `algorithm_params=` on a tile's URL and in a style document: the canonical form
// every spelling shares (defaults left out, parameters in name order), and every refusal a 400
// naming the parameter: unknown algorithms and parameters, values out of bounds, hostile JSON,
// the wrong number of channels, and an exact encoding asked to be lossy or rescaled.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { badRequestMessage } from "../support/bad-request";
import { ALGORITHM_NAMES, ALGORITHMS, algorithmDocument } from "../../shared/maps/algorithms";
import { parseStyleDocument } from "../../shared/maps/style";
import { canonicalTile, parseTileRequest } from "../../shared/maps/tile-request";

const parse = (query: string, y = "0.png") => parseTileRequest({ tileMatrixSet: "WebMercatorQuad", z: "1", x: "0", y }, new URLSearchParams(query));
const canonical = (query: string, y?: string) => canonicalTile(parse(query, y));
const params = (o: unknown) => `algorithm_params=${encodeURIComponent(JSON.stringify(o))}`;

const refusal = badRequestMessage;

describe("algorithm on a tile: canonical form", () => {
  it("leaves defaults out and writes the parameters in name order", () => {
    expect(canonical(`algorithm=hillshade&${params({ z_factor: 2, azimuth: 315, angle_altitude: 30 })}`)).toBe(
      `WebMercatorQuad/1/0/0.png?algorithm=hillshade&algorithm_params=${encodeURIComponent('{"angle_altitude":30,"z_factor":2}').replace(/%2C/g, ",")}`,
    );
    expect(canonical(`algorithm=hillshade&${params({ azimuth: 315 })}`)).toBe("WebMercatorQuad/1/0/0.png?algorithm=hillshade");
    expect(canonical(`algorithm=terrainrgb&${params({ interval: 0.1, baseval: -10000 })}`)).toBe("WebMercatorQuad/1/0/0.png?algorithm=terrainrgb");
    expect(canonical(`algorithm=slope&${params({ units: "percent" })}`)).toBe(canonical(`${params({ units: "percent" })}&algorithm=slope`));
  });

  it("parses its canonical query back to the same tile", () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 360, noNaN: true }), fc.double({ min: 0, max: 90, noNaN: true }), (azimuth, altitude) => {
        const text = canonical(`algorithm=hillshade&${params({ azimuth, angle_altitude: altitude })}`);
        expect(canonical(text.split("?")[1])).toBe(text);
      }),
    );
  });
});

describe("algorithm on a tile: refusals", () => {
  it.each([
    ["algorithm=contours", /algorithm must be one of hillshade, slope, terrarium, terrainrgb, normalizedIndex/],
    [`algorithm=hillshade&${params({ sun: 1 })}`, /hillshade has no parameter "sun"; it takes azimuth, angle_altitude, z_factor, scale/],
    [`algorithm=hillshade&${params({ azimuth: 400 })}`, /algorithm_params.azimuth must be a number from 0 to 360/],
    [`algorithm=hillshade&${params({ z_factor: 0 })}`, /algorithm_params.z_factor must be a number above 0/],
    [`algorithm=slope&${params({ units: "radians" })}`, /algorithm_params.units must be one of degrees, percent/],
    [`algorithm=terrainrgb&${params({ interval: -1 })}`, /interval must be a number above 0/],
    [`algorithm=normalizedIndex&${params({ buffer: 3 })}`, /normalizedIndex has no parameter "buffer"; it takes none/],
    [params({ azimuth: 1 }), /algorithm_params needs an algorithm/],
    ["algorithm=hillshade&algorithm_params=%7Bnot%20json", /algorithm_params must be a JSON object/],
    ["algorithm=hillshade&algorithm_params=[1,2]", /algorithm_params must be a JSON object of parameters/],
    [`algorithm=hillshade&${params({ __proto__: 1, constructor: 2 })}`, /algorithm_params has a key that is not a parameter name/],
    [`algorithm=hillshade&${params({ azimuth: { a: 1 } })}`, /algorithm_params\["azimuth"\] must be a number or a word/],
    ["algorithm=hillshade&algorithm=slope", /"algorithm" is given 2 times/],
  ])("%s", (query, message) => {
    expect(refusal(() => parse(query))).toMatch(message);
  });

  it("refuses the wrong number of channels for the algorithm, when the URL tells them", () => {
    expect(refusal(() => parse("algorithm=hillshade&bidx=1,2,3"))).toMatch(/hillshade reads 1 channel, and the request makes 3; choose them with bidx or an expression/);
    expect(refusal(() => parse("algorithm=normalizedIndex&bidx=1"))).toMatch(/normalizedIndex reads 2 channels, and the request makes 1/);
    expect(parse("algorithm=normalizedIndex&bidx=3,4").bidx).toEqual([3, 4]);
    expect(parse("algorithm=normalizedIndex&expression=b4;b3&colormap_name=rdylgn").algorithm).toBe("normalizedIndex");
  });

  it("refuses a lossy format or a changed value for an exact encoding of heights", () => {
    for (const name of ["terrarium", "terrainrgb"]) {
      expect(refusal(() => parse(`algorithm=${name}`, "0.jpg"))).toMatch(new RegExp(`${name} encodes heights exactly: jpg is lossy; ask for png or webp`));
      for (const [query, field] of [["rescale=0,1000", "rescale"], ["colormap_name=viridis", "colormap_name"], ["gamma=2", "gamma"]]) {
        expect(refusal(() => parse(`algorithm=${name}&${query}`))).toMatch(new RegExp(`${name} encodes heights exactly: ${field} would change them`));
      }
      expect(parse(`algorithm=${name}`, "0.webp").format).toBe("webp");
    }
  });

  it("lets hillshade and slope be coloured", () => {
    expect(parse("algorithm=hillshade&colormap_name=greys").colormapName).toBe("greys");
    expect(parse("algorithm=slope&rescale=0,45&colormap_name=magma").rescale).toEqual([[0, 45]]);
    expect(refusal(() => parse("algorithm=slope&rescale=0,45&rescale=0,9"))).toMatch(/rescale gives 2 ranges/);
  });
});

describe("algorithm in a style document", () => {
  it("reads algorithm_params as a JSON object, checked by the same rules", () => {
    const doc = parseStyleDocument(JSON.stringify({ algorithm: "hillshade", algorithm_params: { azimuth: 90 }, colormap_name: "greys" }), "relief");
    expect(doc).toMatchObject({ algorithm: "hillshade", algorithmParams: { azimuth: 90 } });
    expect(refusal(() => parseStyleDocument(JSON.stringify({ algorithm: "terrarium", rescale: [[0, 1]] }), "dem"))).toMatch(/style "dem": terrarium encodes heights exactly: rescale would change them/);
    expect(refusal(() => parseStyleDocument(JSON.stringify({ algorithm: "slope", algorithm_params: { units: 3 } }), "s"))).toMatch(/units must be one of degrees, percent/);
  });
});

describe("the /algorithms documents", () => {
  it("describe every algorithm with its inputs, outputs and parameters as JSON Schema", () => {
    for (const name of ALGORITHM_NAMES) {
      const doc = algorithmDocument(name) as { id: string; inputs: { nbands: number }; outputs: { nbands: number }; parameters: { properties: Record<string, unknown>; additionalProperties: boolean } };
      expect(doc.id).toBe(name);
      expect(doc.inputs.nbands).toBe(ALGORITHMS[name].inputs);
      expect(doc.outputs.nbands).toBe(ALGORITHMS[name].outputs);
      expect(Object.keys(doc.parameters.properties)).toEqual(Object.keys(ALGORITHMS[name].parameters));
      expect(doc.parameters.additionalProperties).toBe(false);
    }
    expect(algorithmDocument("hillshade")).toMatchObject({ parameters: { properties: { azimuth: { type: "number", minimum: 0, maximum: 360, default: 315 } } } });
  });
});
