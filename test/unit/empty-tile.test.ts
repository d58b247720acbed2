// The edge's answer to a tile outside a source's bounds, decoded as a client would: a PNG of
// the tile's size in which no pixel covers what lies below.
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { EMPTY_TILES } from "../../shared/maps/empty-tile";

describe("the empty tile", () => {
  it.each([
    [1, 256],
    [2, 512],
  ] as const)("at scale %i is a %i² PNG, every pixel fully transparent", async (scale, side) => {
    const image = sharp(EMPTY_TILES[scale]);
    expect(await image.metadata()).toMatchObject({ format: "png", width: side, height: side, channels: 4 });
    const { data } = await image.raw().toBuffer({ resolveWithObject: true });
    const alphas = new Set(data.filter((_, i) => i % 4 === 3));
    expect([...alphas]).toEqual([0]);
    expect(EMPTY_TILES[scale].length).toBeLessThan(2000); // cheap to send and to cache
  });
});
