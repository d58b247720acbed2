// Resolves a parsed IIIF request against an image's dimensions and the server's size limits:
// the pixel rectangle to read, the output size, and the canonical URL form that caches share.

import { badRequest } from "../errors";
import {
  checkEncodable,
  type ApiVersion,
  type Format,
  type ImageRequest,
  type Quality,
  type Region,
  type Size,
} from "./image-request";

export interface ImageLimits {
  width: number;
  height: number;
  maxWidth?: number;
  maxHeight?: number;
  maxArea?: number;
}

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface ResolvedImageRequest {
  region: Rect;
  width: number;
  height: number;
  mirror: boolean;
  degrees: number;
  quality: Quality;
  format: Format;
}

export function resolveRegion(region: Region, img: ImageLimits): Rect {
  const { width: W, height: H } = img;
  let r: Rect;
  switch (region.kind) {
    case "full":
      return { x: 0, y: 0, w: W, h: H };
    case "square": {
      const s = Math.min(W, H);
      return { x: Math.floor((W - s) / 2), y: Math.floor((H - s) / 2), w: s, h: s };
    }
    case "pixels":
      r = { x: region.x, y: region.y, w: region.w, h: region.h };
      break;
    case "percent":
      r = {
        x: Math.round((region.x * W) / 100),
        y: Math.round((region.y * H) / 100),
        w: Math.round((region.w * W) / 100),
        h: Math.round((region.h * H) / 100),
      };
      break;
  }
  if (r.x >= W || r.y >= H) throw badRequest(`region lies outside the ${W}x${H} image`);
  // A region reaching past the edge is cropped to the image (IIIF 3.0 §4.1).
  r.w = Math.min(r.w, W - r.x);
  r.h = Math.min(r.h, H - r.y);
  if (r.w <= 0 || r.h <= 0) throw badRequest("region has zero width or height");
  return r;
}

/** The largest scale the server's limits allow for a region (Infinity when unlimited). */
function limitScale(rw: number, rh: number, img: ImageLimits): number {
  let s = Infinity;
  if (img.maxWidth) s = Math.min(s, img.maxWidth / rw);
  if (img.maxHeight) s = Math.min(s, img.maxHeight / rh);
  if (img.maxArea) s = Math.min(s, Math.sqrt(img.maxArea / (rw * rh)));
  return s;
}

export function resolveSize(size: Size, r: Rect, img: ImageLimits): { width: number; height: number } {
  const { w: rw, h: rh } = r;
  let width: number;
  let height: number;
  switch (size.kind) {
    case "max": {
      const s = Math.min(limitScale(rw, rh, img), size.upscale ? Infinity : 1);
      const scale = Number.isFinite(s) ? s : 1;
      width = Math.max(1, Math.floor(rw * scale + 1e-9));
      height = Math.max(1, Math.floor(rh * scale + 1e-9));
      return { width, height }; // max is within the limits by construction
    }
    case "width":
      width = size.w;
      height = Math.round((rh * size.w) / rw);
      break;
    case "height":
      height = size.h;
      width = Math.round((rw * size.h) / rh);
      break;
    case "percent":
      width = Math.round((rw * size.n) / 100);
      height = Math.round((rh * size.n) / 100);
      break;
    case "exact":
      width = size.w;
      height = size.h;
      break;
    case "fit": {
      const s = Math.min(size.w / rw, size.h / rh, size.upscale ? Infinity : 1);
      width = Math.min(size.w, Math.round(rw * s));
      height = Math.min(size.h, Math.round(rh * s));
      break;
    }
  }
  if (width <= 0 || height <= 0) throw badRequest(`size rounds to ${width}x${height} pixels`);
  if (!size.upscale && (width > rw || height > rh)) {
    throw badRequest(`size ${width}x${height} is larger than the ${rw}x${rh} region; use "^" to upscale`);
  }
  if (
    (img.maxWidth && width > img.maxWidth) ||
    (img.maxHeight && height > img.maxHeight) ||
    (img.maxArea && width * height > img.maxArea)
  ) {
    throw badRequest(`size ${width}x${height} exceeds the server's maxWidth/maxHeight/maxArea`);
  }
  return { width, height };
}

export function resolveImageRequest(req: ImageRequest, img: ImageLimits): ResolvedImageRequest {
  const region = resolveRegion(req.region, img);
  const { width, height } = resolveSize(req.size, region, img);
  // The size itself is held to the limit too, as the grammar holds an explicit one: a canonical
  // form then always parses again, whatever the rotation does to the canvas.
  const canvas = rotatedCanvas(width, height, req.rotation.degrees);
  const rotated = canvas.width !== width || canvas.height !== height ? ` (${canvas.width}x${canvas.height} rotated)` : "";
  checkEncodable(
    Math.max(width, canvas.width),
    Math.max(height, canvas.height),
    req.format,
    `size ${width}x${height}${rotated}`,
  );
  return {
    region,
    width,
    height,
    mirror: req.rotation.mirror,
    degrees: req.rotation.degrees,
    quality: req.quality,
    format: req.format,
  };
}

/** The size of the answered image: an arbitrary angle grows the canvas to the rotated bounds. */
export function rotatedCanvas(width: number, height: number, degrees: number): { width: number; height: number } {
  if (degrees % 180 === 0) return { width, height };
  if (degrees % 90 === 0) return { width: height, height: width };
  const rad = (degrees * Math.PI) / 180;
  const cos = Math.abs(Math.cos(rad));
  const sin = Math.abs(Math.sin(rad));
  // Rounded up: never smaller than libvips's canvas, at most a pixel larger.
  return { width: Math.ceil(width * cos + height * sin), height: Math.ceil(width * sin + height * cos) };
}

/**
 * The canonical form of a resolved request (region/size/rotation/quality.format), per
 * version: equivalent URLs map to one string, which the Link header names.
 */
export function canonicalParts(r: ResolvedImageRequest, img: ImageLimits, version: ApiVersion): string {
  const { w, h } = r.region;
  const max = resolveSize({ kind: "max", upscale: false }, r.region, img);
  const isMax = r.width === max.width && r.height === max.height;
  let size: string;
  if (version === 3) {
    size = isMax ? "max" : explicitSize(r);
  } else {
    // 2.1 spells proportional sizes "w," and keeps "w,h" only when the aspect changes.
    const proportional = Math.round((h * r.width) / w) === r.height;
    size = isMax ? "full" : proportional ? `${r.width},` : `${r.width},${r.height}`;
  }
  return joinParts(r, img, size);
}

/**
 * The 3.0 canonical form with the size always spelled "w,h" (never "max"): it names the pixels
 * whatever the server's size limits, which only the edge knows. The edge keys its cache and
 * ETags with it and forwards it to the decoder, which resolves it to exactly this size; a change
 * of MAX_WIDTH then cannot answer an old size under the same key.
 */
export function pixelParts(r: ResolvedImageRequest, img: ImageLimits): string {
  return joinParts(r, img, explicitSize(r));
}

const explicitSize = (r: ResolvedImageRequest) =>
  `${r.width > r.region.w || r.height > r.region.h ? "^" : ""}${r.width},${r.height}`;

function joinParts(r: ResolvedImageRequest, img: ImageLimits, size: string): string {
  const { x, y, w, h } = r.region;
  const region = x === 0 && y === 0 && w === img.width && h === img.height ? "full" : `${x},${y},${w},${h}`;
  const rotation = `${r.mirror ? "!" : ""}${plainDecimal(r.degrees)}`;
  return `${region}/${size}/${rotation}/${r.quality}.${r.format}`;
}

/**
 * `n` written without an exponent ("0.0000001", not "1e-7", which the grammar rejects), with
 * exactly the digits of its shortest round-trip form, so parsing it gives back `n`. Below 1e21
 * (rotations are below 360), only tiny numbers have an exponent.
 */
export function plainDecimal(n: number): string {
  const text = String(n);
  const e = /^(\d)(?:\.(\d+))?e-(\d+)$/.exec(text);
  return e ? `0.${"0".repeat(Number(e[3]) - 1)}${e[1]}${e[2] ?? ""}` : text;
}
