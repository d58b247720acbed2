// Pixel comparison for tests: decode both images to raw RGB and measure the mean absolute
// difference per channel, a tolerance that JPEG's loss fits under and a wrong picture does not.
import sharp, { type Sharp } from "sharp";

export const TEST_PATTERN_PNG = new URL("../../samples/test-pattern.png", import.meta.url).pathname;

async function rgb(input: Sharp): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await input.removeAlpha().toColourspace("srgb").raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** The reference picture for a region of the test pattern, resized like a server would. */
export function reference(
  region: { x: number; y: number; w: number; h: number },
  width = region.w,
  height = region.h,
): Sharp {
  return sharp(TEST_PATTERN_PNG)
    .extract({ left: region.x, top: region.y, width: region.w, height: region.h })
    .resize(width, height, { fit: "fill" });
}

/** Mean absolute difference per channel (0..255); throws if the sizes differ. */
export async function meanAbsDiff(actual: Uint8Array, expected: Sharp): Promise<number> {
  const a = await rgb(sharp(actual));
  const e = await rgb(expected);
  if (a.width !== e.width || a.height !== e.height || a.data.length !== e.data.length) {
    const shape = (x: typeof a) => `${x.width}x${x.height}x${x.data.length / (x.width * x.height)}`;
    throw new Error(`image ${shape(a)} differs in shape from the reference's ${shape(e)}`);
  }
  let sum = 0;
  for (let i = 0; i < a.data.length; i++) sum += Math.abs(a.data[i] - e.data[i]);
  return sum / a.data.length;
}
