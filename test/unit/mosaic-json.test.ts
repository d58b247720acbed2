// MosaicJSON 0.0.3 as both tiers read it: quadkeys, the document as a publisher (or an attacker)
// writes it, and which assets a tile paints, in which order.
import { describe, expect, it } from "vitest";
import { quadkeyToTile, tileToQuadkey } from "../../shared/maps/mosaic-json";
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
