// The IIIF info.json documents (Image API 3.0 and 2.1) built from a source's metadata and the
// server's declared limits. What is listed here is exactly what the renderer supports.
import { ASSUMED_CHANNELS, maxRenderArea } from "../cost";
import type { SourceInfo } from "../protocol";
import type { ApiVersion } from "./image-request";

/** Server-imposed output limits, declared in info.json and enforced on every request. */
export interface SizeLimits {
  maxWidth?: number;
  maxHeight?: number;
  maxArea?: number;
}

/**
 * The limits a source is served under: the operator's, with maxArea never above what the
 * decoder can render of it within its work budget (SourceInfo.maxArea) nor what one core
 * renders within `workLimit`, the work the DO grants a full (REQUEST_TIMEOUT), by the one formula.
 */
export function servedLimits(operator: SizeLimits, info: SourceInfo, workLimit?: number): SizeLimits {
  const byWork = workLimit !== undefined && !info.mosaic ? areaWithinWork(info, workLimit) : undefined;
  const areas = [operator.maxArea, info.maxArea, byWork].filter((a) => a !== undefined);
  return { ...operator, maxArea: areas.length > 0 ? Math.min(...areas) : undefined };
}

/**
 * The largest whole-image output area one core renders within `work` units (its memory aside).
 * Remembered by everything it depends on: the search behind it makes some fifty estimates, and
 * every image request of a source asks it again.
 */
function areaWithinWork(info: SourceInfo, work: number): number {
  const source = { levels: info.levels, tileWidth: info.tileWidth, tileHeight: info.tileHeight };
  const channels = info.channels ?? ASSUMED_CHANNELS;
  const key = JSON.stringify([source, channels, info.codec, work]);
  let area = areasWithinWork.get(key);
  if (area === undefined) {
    area = maxRenderArea(source, channels, info.codec, { bytes: Number.MAX_SAFE_INTEGER, work });
    if (areasWithinWork.size >= REMEMBERED_AREAS) areasWithinWork.clear(); // bounded: an isolate serves many sources
    areasWithinWork.set(key, area);
  }
  return area;
}
const areasWithinWork = new Map<string, number>();
const REMEMBERED_AREAS = 1024;

/** Formats beyond level 2's jpg and png: every other format of the Image API. */
export const EXTRA_FORMATS = ["webp", "tif", "gif", "pdf", "jp2"] as const;
export const EXTRA_QUALITIES_3 = ["bitonal"] as const;
/** Features beyond level 2 (3.0 names; 2.1 shares them but lists regionSquare too). */
export const EXTRA_FEATURES = [
  "canonicalLinkHeader",
  "profileLinkHeader",
  "mirroring",
  "rotationArbitrary",
  "sizeUpscaling",
] as const;

export const CONTEXT: Record<ApiVersion, string> = {
  2: "http://iiif.io/api/image/2/context.json",
  3: "http://iiif.io/api/image/3/context.json",
};
export const PROFILE_URI: Record<ApiVersion, string> = {
  2: "http://iiif.io/api/image/2/level2.json",
  3: "http://iiif.io/api/image/3/level2.json",
};

/** Scale factors of the stored levels relative to full resolution (1, 2, 4, ...). */
export function scaleFactors(info: SourceInfo): number[] {
  return info.levels.map((l) => Math.round(info.width / l.width));
}

/** How a seeAlso entry says that the document it links is TileJSON 3.0.0. */
export const TILEJSON_PROFILE = "https://github.com/mapbox/tilejson-spec/tree/master/3.0.0";

/** A map layer of the same source: the URL of its TileJSON on one tile matrix set. */
export interface TileJsonLink {
  tileMatrixSet: string;
  url: string;
}

/** The source's map layers, as IIIF links related data that a machine reads (absent: none). */
export function seeAlso(version: ApiVersion, tileJsons: TileJsonLink[]) {
  if (tileJsons.length === 0) return {};
  const label = (link: TileJsonLink) => `TileJSON 3.0.0, ${link.tileMatrixSet}`;
  const kind = { format: "application/json", profile: TILEJSON_PROFILE };
  return {
    seeAlso: tileJsons.map((link) =>
      version === 3
        ? { id: link.url, type: "Dataset", ...kind, label: { en: [label(link)] } }
        : { "@id": link.url, ...kind, label: label(link) },
    ),
  };
}

function common(info: SourceInfo, limits: SizeLimits) {
  return {
    protocol: "http://iiif.io/api/image",
    width: info.width,
    height: info.height,
    ...limits,
    // Smallest first; each is a stored level, so it is served without reading full resolution.
    sizes: info.levels
      .slice(1)
      .reverse()
      .map(({ width, height }) => ({ width, height })),
    tiles: [{ width: info.tileWidth, height: info.tileHeight, scaleFactors: scaleFactors(info) }],
  };
}

export function infoJson(version: ApiVersion, info: SourceInfo, serviceId: string, limits: SizeLimits, tileJsons: TileJsonLink[]) {
  if (version === 3) {
    return {
      "@context": CONTEXT[3],
      id: serviceId,
      type: "ImageService3",
      ...common(info, limits),
      profile: "level2",
      extraFormats: [...EXTRA_FORMATS],
      extraQualities: [...EXTRA_QUALITIES_3],
      extraFeatures: [...EXTRA_FEATURES],
      ...seeAlso(3, tileJsons),
    };
  }
  const { maxWidth, maxHeight, maxArea, ...rest } = common(info, limits);
  return {
    "@context": CONTEXT[2],
    "@id": serviceId,
    ...rest,
    // 2.1 declares limits and extras inside the profile's second entry.
    profile: [
      PROFILE_URI[2],
      {
        formats: ["jpg", "png", ...EXTRA_FORMATS],
        qualities: ["default", "color", "gray", "bitonal"],
        supports: [...EXTRA_FEATURES.filter((f) => f !== "sizeUpscaling"), "regionSquare", "sizeAboveFull"],
        ...(maxWidth && { maxWidth }),
        ...(maxHeight && { maxHeight }),
        ...(maxArea && { maxArea }),
      },
    ],
    ...seeAlso(2, tileJsons),
  };
}
