// The IIIF info.json document built from a source's metadata.
import type { SourceInfo } from "../protocol";

/** Scale factors of the stored levels relative to full resolution (1, 2, 4, ...). */
export function scaleFactors(info: SourceInfo): number[] {
  return info.levels.map((l) => Math.round(info.width / l.width));
}

export function infoJson3(info: SourceInfo, serviceId: string) {
  return {
    "@context": "http://iiif.io/api/image/3/context.json",
    id: serviceId,
    type: "ImageService3",
    protocol: "http://iiif.io/api/image",
    profile: "level1",
    width: info.width,
    height: info.height,
    tiles: [{ width: info.tileWidth, height: info.tileHeight, scaleFactors: scaleFactors(info) }],
    // Smallest first; each is a stored level, so it is served without resampling the whole image.
    sizes: info.levels.slice(1).reverse().map(({ width, height }) => ({ width, height })),
  };
}
