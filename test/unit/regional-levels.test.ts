// Pyramid geometry: level choice and windows at a level.

import { describe, expect, it } from "vitest";
import { chooseLevel, windowAtLevel } from "../../shared/levels";

const levels = [
  { width: 1000, height: 800 },
  { width: 500, height: 400 },
  { width: 250, height: 200 },
];
const full = { x: 0, y: 0, w: 1000, h: 800 };

describe("chooseLevel", () => {
  it("picks the smallest level that still covers the output", () => {
    expect(chooseLevel(levels, full, 1000, 800)).toBe(0);
    expect(chooseLevel(levels, full, 501, 400)).toBe(0);
    expect(chooseLevel(levels, full, 500, 400)).toBe(1);
    expect(chooseLevel(levels, full, 251, 10)).toBe(1);
    expect(chooseLevel(levels, full, 250, 200)).toBe(2);
    expect(chooseLevel(levels, full, 10, 10)).toBe(2);
  });

  it("needs both dimensions covered (non-proportional sizes)", () => {
    expect(chooseLevel(levels, full, 100, 201)).toBe(1);
    expect(chooseLevel(levels, full, 251, 100)).toBe(1);
  });

  it("scales the region, not the whole image", () => {
    const region = { x: 100, y: 100, w: 200, h: 200 };
    expect(chooseLevel(levels, region, 200, 200)).toBe(0);
    expect(chooseLevel(levels, region, 100, 100)).toBe(1);
    expect(chooseLevel(levels, region, 50, 50)).toBe(2);
  });

  it("reads the full image for an upscale", () => {
    expect(chooseLevel(levels, full, 2000, 1600)).toBe(0);
    expect(chooseLevel([levels[0]], full, 10, 10)).toBe(0);
  });
});

describe("windowAtLevel", () => {
  it("maps a region to whole pixels of the level, widening partial pixels", () => {
    expect(windowAtLevel(levels[0], levels[0], { x: 100, y: 50, w: 300, h: 200 })).toEqual([100, 50, 400, 250]);
    expect(windowAtLevel(levels[0], levels[1], { x: 100, y: 50, w: 300, h: 200 })).toEqual([50, 25, 200, 125]);
    expect(windowAtLevel(levels[0], levels[2], { x: 101, y: 3, w: 10, h: 10 })).toEqual([25, 0, 28, 4]);
  });

  it("stays inside the level and is never empty", () => {
    expect(windowAtLevel(levels[0], levels[2], { x: 999, y: 799, w: 1, h: 1 })).toEqual([249, 199, 250, 200]);
    // GDAL rounds odd overview sizes up: 1001 → 501.
    const odd = [{ width: 1001, height: 1001 }, { width: 501, height: 501 }];
    const [x0, y0, x1, y1] = windowAtLevel(odd[0], odd[1], { x: 0, y: 0, w: 1001, h: 1001 });
    expect([x0, y0, x1, y1]).toEqual([0, 0, 501, 501]);
  });
});
