// The IIIF Image API request grammar, for 3.0 and 2.1 from one parser so they cannot drift.
// Parsing is pure syntax; resolving against an image's dimensions is in resolve.ts.

import { badRequest } from "../errors";

export type ApiVersion = 2 | 3;

export type Region =
  | { kind: "full" }
  | { kind: "square" }
  | { kind: "pixels"; x: number; y: number; w: number; h: number }
  | { kind: "percent"; x: number; y: number; w: number; h: number };

export type Size = { upscale: boolean } & (
  | { kind: "max" }
  | { kind: "width"; w: number }
  | { kind: "height"; h: number }
  | { kind: "percent"; n: number }
  | { kind: "exact"; w: number; h: number }
  | { kind: "fit"; w: number; h: number }
);

export interface Rotation {
  mirror: boolean;
  degrees: number;
}

export const QUALITIES = ["default", "color", "gray", "bitonal"] as const;
export type Quality = (typeof QUALITIES)[number];

export const FORMATS = ["jpg", "png", "webp", "tif", "gif", "pdf", "jp2"] as const;
export type Format = (typeof FORMATS)[number];

/**
 * The longest side, in pixels, each format's encoder writes: libjpeg's 65,500 (jpg, and the JPEG
 * inside a pdf), WebP's 16,383, GIF's 16-bit 65,535; png and tif, whose encoders go further, at
 * libvips's coordinate limit (jp2 answers 501 anyway). A larger size is 400 before any work,
 * not a failed encode.
 */
export const MAX_SIDE: Record<Format, number> = {
  jpg: 65_500,
  pdf: 65_500,
  webp: 16_383,
  gif: 65_535,
  png: 10_000_000,
  tif: 10_000_000,
  jp2: 10_000_000,
};

/** 400 when a `width`x`height` image is larger than `format` can encode. */
export function checkEncodable(width: number, height: number, format: Format, what: string): void {
  if (width > MAX_SIDE[format] || height > MAX_SIDE[format]) {
    throw badRequest(`${what} exceeds ${MAX_SIDE[format]} pixels a side, the most ${format} can encode`);
  }
}

export interface ImageRequest {
  region: Region;
  size: Size;
  rotation: Rotation;
  quality: Quality;
  format: Format;
}

/** The four path segments after the identifier; quality and format still joined by a dot. */
export interface ImageRequestParts {
  region: string;
  size: string;
  rotation: string;
  qualityFormat: string;
}

const INT = /^\d+$/;
const FLOAT = /^(\d+(\.\d*)?|\.\d+)$/;

function ints(text: string, count: number, what: string): number[] {
  const parts = text.split(",");
  if (parts.length !== count || !parts.every((p) => INT.test(p))) {
    throw badRequest(`${what} "${text}" must be ${count} comma-separated non-negative integers`);
  }
  return parts.map(Number);
}

function floats(text: string, count: number, what: string): number[] {
  const parts = text.split(",");
  if (parts.length !== count || !parts.every((p) => FLOAT.test(p))) {
    throw badRequest(`${what} "${text}" must be ${count} comma-separated non-negative numbers`);
  }
  return parts.map(Number);
}

export function parseRegion(text: string): Region {
  if (text === "full") return { kind: "full" };
  if (text === "square") return { kind: "square" };
  const percent = text.startsWith("pct:");
  const [x, y, w, h] = percent
    ? floats(text.slice(4), 4, "region")
    : ints(text, 4, "region");
  if (w === 0 || h === 0) throw badRequest(`region "${text}" has zero width or height`);
  return { kind: percent ? "percent" : "pixels", x, y, w, h };
}

export function parseSize(text: string, version: ApiVersion): Size {
  const upscale = version === 3 && text.startsWith("^");
  const body = upscale ? text.slice(1) : text;
  // 2.1 has no "^": any size may upscale. It also spells the whole image "full".
  const up = upscale || version === 2;
  if (body === "max" || (version === 2 && body === "full")) return { kind: "max", upscale };
  if (body.startsWith("pct:")) {
    const [n] = floats(body.slice(4), 1, "size percentage");
    if (n === 0) throw badRequest(`size "${text}" is zero percent`);
    if (n > 100 && !up) throw badRequest(`size "${text}" upscales without "^"`);
    return { kind: "percent", n, upscale: up };
  }
  const fit = body.startsWith("!");
  const dims = fit ? body.slice(1) : body;
  const m = /^(\d*),(\d*)$/.exec(dims);
  if (!m || (m[1] === "" && m[2] === "") || (fit && (m[1] === "" || m[2] === ""))) {
    throw badRequest(`size "${text}" is not a IIIF ${version === 3 ? "3.0" : "2.1"} size`);
  }
  const w = m[1] === "" ? undefined : Number(m[1]);
  const h = m[2] === "" ? undefined : Number(m[2]);
  if (w === 0 || h === 0) throw badRequest(`size "${text}" has zero width or height`);
  if (fit) return { kind: "fit", w: w!, h: h!, upscale: up };
  if (w !== undefined && h !== undefined) return { kind: "exact", w, h, upscale: up };
  if (w !== undefined) return { kind: "width", w, upscale: up };
  return { kind: "height", h: h!, upscale: up };
}

export function parseRotation(text: string): Rotation {
  const mirror = text.startsWith("!");
  const body = mirror ? text.slice(1) : text;
  if (!FLOAT.test(body) || Number(body) > 360) {
    throw badRequest(`rotation "${text}" must be a number from 0 to 360, optionally prefixed by "!"`);
  }
  return { mirror, degrees: Number(body) % 360 };
}

export function parseQualityFormat(text: string): { quality: Quality; format: Format } {
  const dot = text.lastIndexOf(".");
  if (dot < 0) throw badRequest(`"${text}" must be {quality}.{format}`);
  const quality = text.slice(0, dot);
  const format = text.slice(dot + 1);
  if (!(QUALITIES as readonly string[]).includes(quality)) {
    throw badRequest(`quality "${quality}" is not one of ${QUALITIES.join(", ")}`);
  }
  if (!(FORMATS as readonly string[]).includes(format)) {
    throw badRequest(`format "${format}" is not one of ${FORMATS.join(", ")}`);
  }
  return { quality: quality as Quality, format: format as Format };
}

export function parseImageRequest(parts: ImageRequestParts, version: ApiVersion): ImageRequest {
  const size = parseSize(parts.size, version);
  const { quality, format } = parseQualityFormat(parts.qualityFormat);
  // An absurd size (^100000000,) is refused here, before the source is even looked up.
  const w = "w" in size ? size.w : 0;
  const h = "h" in size ? size.h : 0;
  checkEncodable(w, h, format, `size "${parts.size}"`);
  return { region: parseRegion(parts.region), size, rotation: parseRotation(parts.rotation), quality, format };
}
