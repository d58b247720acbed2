import { describe, expect, it } from "vitest";
import { parseImageRequest } from "../../shared/iiif/image-request";
import { canonicalParts, resolveImageRequest, type ImageLimits } from "../../shared/iiif/resolve";
import { HttpError } from "../../shared/errors";
import { servedLimits } from "../../shared/iiif/info";
import { maxRenderArea } from "../../shared/cost";

const img = { width: 1000, height: 800 };
const parse = (path: string, version: 2 | 3 = 3) => {
  const [region, size, rotation, qualityFormat] = path.split("/");
  return parseImageRequest({ region, size, rotation, qualityFormat }, version);
};
const canonical = (path: string, version: 2 | 3 = 3, limits: ImageLimits = img) =>
  canonicalParts(resolveImageRequest(parse(path, version), limits), limits, version);
const status = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as HttpError).status;
  }
  return 200;
};

describe("IIIF 3.0 grammar", () => {
  it("canonicalizes equivalent requests to one form", () => {
    expect(canonical("full/max/0/default.jpg")).toBe("full/max/0/default.jpg");
    expect(canonical("0,0,1000,800/max/0/default.jpg")).toBe("full/max/0/default.jpg");
    expect(canonical("0,0,5000,5000/1000,/0/default.jpg")).toBe("full/max/0/default.jpg");
    expect(canonical("full/500,/0/default.jpg")).toBe("full/500,400/0/default.jpg");
    expect(canonical("full/,400/0/default.jpg")).toBe("full/500,400/0/default.jpg");
    expect(canonical("full/pct:50/0/default.jpg")).toBe("full/500,400/0/default.jpg");
    expect(canonical("full/!500,500/0/default.jpg")).toBe("full/500,400/0/default.jpg");
    expect(canonical("pct:10,10,50,50/max/0/default.jpg")).toBe("100,80,500,400/max/0/default.jpg");
    expect(canonical("square/100,/!90/gray.png")).toBe("100,0,800,800/100,100/!90/gray.png");
  });

  it("crops a region that reaches past the edge", () => {
    expect(canonical("900,700,500,500/max/0/default.jpg")).toBe("900,700,100,100/max/0/default.jpg");
  });

  it("answers 400 for malformed and impossible requests", () => {
    for (const bad of [
      "1000,0,10,10/max/0/default.jpg", // wholly outside
      "0,0,0,10/max/0/default.jpg", // zero width
      "a,b,c,d/max/0/default.jpg",
      "full/2000,/0/default.jpg", // upscale without ^
      "full/pct:101/0/default.jpg",
      "full/0,/0/default.jpg",
      "full/pct:0.01/0/default.jpg", // rounds to zero
      "full/max/361/default.jpg",
      "full/max/0/fancy.jpg",
      "full/max/0/default.bmp",
      "full/max/0/default",
      "full/full/0/default.jpg", // 2.1 spelling in 3.0
    ]) {
      expect(status(() => canonical(bad)), bad).toBe(400);
    }
  });

  it("upscales only with ^ and within maxWidth", () => {
    expect(canonical("full/^2000,/0/default.jpg")).toBe("full/^2000,1600/0/default.jpg");
    const limits = { ...img, maxWidth: 1500 };
    expect(status(() => canonical("full/^2000,/0/default.jpg", 3, limits))).toBe(400);
    expect(canonical("full/^max/0/default.jpg", 3, limits)).toBe("full/^1500,1200/0/default.jpg");
    expect(canonical("full/max/0/default.jpg", 3, { ...img, maxWidth: 500 })).toBe("full/max/0/default.jpg");
  });
});

describe("canonical numbers", () => {
  it("writes tiny rotations as plain decimals that parse back to the same angle", () => {
    for (const [rotation, form] of [
      ["0.0000001", "0.0000001"],
      ["!0.00000012345", "!0.00000012345"],
      ["1e-7", undefined], // not IIIF: the grammar has no exponents
    ] as const) {
      for (const v of [3, 2] as const) {
        if (form === undefined) {
          expect(status(() => canonical(`full/max/${rotation}/default.jpg`, v))).toBe(400);
          continue;
        }
        const c = canonical(`full/max/${rotation}/default.jpg`, v);
        expect(c).toBe(`full/${v === 3 ? "max" : "full"}/${form}/default.jpg`);
        expect(parse(c, v).rotation.degrees).toBe(Number(form.replace("!", "")));
      }
    }
  });
});

describe("encoder limits", () => {
  it("refuses a size the format cannot encode at parse time, naming the limit", () => {
    for (const [path, limit] of [
      ["full/^100000000,/0/default.png", 10_000_000],
      ["full/^65501,/0/default.jpg", 65_500],
      ["full/^,16384/0/default.webp", 16_383],
    ] as const) {
      expect(() => parse(path)).toThrow(`exceeds ${limit} pixels a side`);
    }
    expect(canonical("full/^16383,/0/default.webp")).toBe("full/^16383,13106/0/default.webp");
  });

  it("counts the canvas an arbitrary rotation grows to", () => {
    expect(canonical("full/^11000,/0/default.webp")).toBe("full/^11000,8800/0/default.webp");
    expect(canonical("full/^11000,/90/default.webp")).toBe("full/^11000,8800/90/default.webp");
    expect(() => canonical("full/^13000,/45/default.webp")).toThrow("exceeds 16383 pixels a side");
  });
});

describe("IIIF 2.1 grammar", () => {
  it("uses full and w, canonical sizes and upscales without ^", () => {
    expect(canonical("full/full/0/default.jpg", 2)).toBe("full/full/0/default.jpg");
    expect(canonical("full/,400/0/default.jpg", 2)).toBe("full/500,/0/default.jpg");
    expect(canonical("full/2000,/0/default.jpg", 2)).toBe("full/2000,/0/default.jpg");
    expect(canonical("full/100,100/0/default.jpg", 2)).toBe("full/100,100/0/default.jpg");
  });
});

describe("the limits a source is served under", () => {
  const info = { id: "a", version: "v", width: 20000, height: 20000, tileWidth: 512, tileHeight: 512, levels: [], bytes: 1 };

  it("are the operator's when the decoder renders the image whole", () => {
    expect(servedLimits({ maxWidth: 4000 }, info)).toEqual({ maxWidth: 4000, maxArea: undefined });
  });

  it("take the decoder's maxArea when the operator sets none or a larger one, and the operator's when smaller", () => {
    const rendered = { ...info, maxArea: 48_000_000 };
    expect(servedLimits({}, rendered)).toEqual({ maxArea: 48_000_000 });
    expect(servedLimits({ maxWidth: 9000, maxArea: 60_000_000 }, rendered)).toEqual({ maxWidth: 9000, maxArea: 48_000_000 });
    expect(servedLimits({ maxArea: 1_000_000 }, rendered)).toEqual({ maxArea: 1_000_000 });
  });

  it("are bounded by the work one core does within the DO's REQUEST_TIMEOUT: the longer it is, the larger", () => {
    const pyramid = { ...info, levels: [20000, 10000, 5000, 2500, 1250].map((side) => ({ width: side, height: side })), channels: 3, codec: "jpeg" as const, maxArea: 4_000_000_000 };
    const at = (seconds: number) => servedLimits({}, pyramid, seconds * 1000).maxArea!;
    expect(at(60)).toBeLessThan(4_000_000_000);
    expect(at(10)).toBeLessThan(at(60));
    expect(at(600)).toBeGreaterThan(at(60));
  });

  it("are worked out for each source's own shape: two sources under one id and version never share a bound", () => {
    // The edge remembers each bound it has worked out (a search of about fifty estimates per request otherwise).
    const shaped = (side: number, channels: number, codec: "jpeg" | "deflate", tile = 256) => ({
      ...info,
      levels: [side, side / 4].map((s) => ({ width: s, height: s })),
      tileWidth: tile,
      tileHeight: tile,
      channels,
      codec,
    });
    const shapes = [shaped(40000, 3, "jpeg"), shaped(8000, 3, "jpeg"), shaped(40000, 1, "jpeg"), shaped(40000, 3, "deflate"), shaped(40000, 3, "jpeg", 1024)];
    const direct = (i: (typeof shapes)[number], workMs: number) => maxRenderArea(i, i.channels, i.codec, { bytes: Number.MAX_SAFE_INTEGER, work: workMs });
    const expected = shapes.flatMap((i) => [direct(i, 10_000), direct(i, 20_000)]);
    expect(new Set(expected).size).toBeGreaterThanOrEqual(5); // the shapes' bounds differ, so a shared one would show
    for (let round = 0; round < 2; round++) {
      expect(shapes.flatMap((i) => [servedLimits({}, i, 10_000).maxArea, servedLimits({}, i, 20_000).maxArea])).toEqual(expected);
    }
  });
});
