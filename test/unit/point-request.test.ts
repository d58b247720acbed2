// The point request's grammar and canonical form (shared by the edge and the decoder): every
// spelling of one point is one canonical text (one cache entry), a canonical text parses back to
// itself, and what is not a point is 400 naming the bad part.
import { describe, expect, it } from "vitest";
import { HttpError } from "../../shared/errors";
import { canonicalPoint, parsePointRequest } from "../../shared/maps/point-request";

const canonical = (coords: string, query = "") => canonicalPoint(parsePointRequest(coords, new URLSearchParams(query)));

describe("a point's canonical form", () => {
  it("writes numbers as JavaScript does and leaves defaults out", () => {
    for (const [coords, query] of [["15.1,47.75", ""], ["15.10,47.750", ""], ["+15.1,4775e-2", ""], ["15.1,47.75", "coord_crs=epsg:4326"], ["15.1,47.75", "pixel_selection=first&stage=after_channels"]]) {
      expect(canonical(coords, query), `${coords}?${query}`).toBe("15.1,47.75");
    }
    expect(canonical("-0,0")).toBe("0,0");
    expect(canonical("505130.0,5294870", "bidx=3&bidx=1&coord_crs=EPSG:032633")).toBe("505130,5294870?coord_crs=EPSG:32633&bidx=3,1");
    expect(canonical("15,47", "expression=(b1)%2B%20b2")).toBe("15,47?expression=b1%2Bb2");
    expect(canonical("15,47", "bidx=1,2,3,4")).toBe("15,47?bidx=1,2,3,4");
  });

  it("is a fixed point: the canonical text parses back to itself", () => {
    const text = canonical("16.25,48.5", "assets=B04,B08&expression=(B08-B04)/(B08%2BB04)&pixel_selection=highest&nodata=nan");
    const [coords, query] = text.split("?");
    expect(canonical(coords, query)).toBe(text);
  });
});

describe("what is not a point", () => {
  it.each([
    ["NaN,45", ""],
    ["1e999,45", ""],
    ["0x10,45", ""],
    [`${"9".repeat(41)},45`, ""],
    ["15", ""],
    ["15,45,1", ""],
    [" 15,45", ""],
    ["15,", ""],
    ["180.5,45", ""],
    ["15,-91", ""],
    ["15,45", "rescale=0,1"],
    ["15,45", "coord_crs=WGS84"],
    ["15,45", "bidx=1&expression=b1"],
    ["15,45", `bidx=${"1,".repeat(256)}1`],
  ])("%s?%s is 400", (coords, query) => {
    let thrown: unknown;
    try {
      parsePointRequest(coords, new URLSearchParams(query));
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(HttpError);
    expect((thrown as HttpError).status).toBe(400);
  });

  it("takes coordinates past lon/lat's range in another CRS", () => {
    expect(canonical("505130,5294870", "coord_crs=EPSG:32633")).toBe("505130,5294870?coord_crs=EPSG:32633");
  });
});
