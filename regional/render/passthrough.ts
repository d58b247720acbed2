// Codec passthrough: a request that is exactly one stored JPEG or WebP tile at its native size
// (the usual viewer and map-tile request on a COG whose tiles match the client's) is answered
// with the stored bytes (JPEG: JPEGTables merged in, sent as the tables then the tile, both as
// read, never copied into one buffer; the tile read into reused memory): no decode, no
// re-encode, no generation loss.
//
// Exactly means: the output format is the stored codec's, default quality (or color for a
// colour source), no rotation or mirror, the region maps onto one whole block of the level
// chosen for that size (not a padded edge block), and the block's samples are exactly what a
// viewer shows (JPEG: gray, or YCbCr/RGB without alpha or extra samples; WebP: RGB or RGBA).

import sharp from "sharp";
import type { ResolvedImageRequest } from "../../shared/iiif/resolve";
import { storedBytes } from "../cog/block-reader";
import type { Cog } from "../cog/cog";
import { COMPRESSION } from "../cog/codecs";
import { jpegFrame, tablesPrefix, tileSegments } from "../cog/jpeg-tables";
import type { EncodedAnswer } from "./prepared-decode";
import { malformed } from "../cog/tiff-guard";
import { chooseLevel } from "../../shared/levels";

/** Float slack when checking that a region maps onto whole pixels of an overview. */
const EPSILON = 1e-6;

export interface StoredTile {
  level: number;
  bx: number;
  by: number;
  format: "jpg" | "webp";
}

/** Stored codecs whose tiles are whole images of an IIIF output format. */
const PASSABLE: Record<number, StoredTile["format"]> = { [COMPRESSION.jpeg]: "jpg", [COMPRESSION.webp]: "webp" };

/** The stored tile a request maps onto exactly, if any (pure; no I/O). */
export function passthroughTile(cog: Cog, req: ResolvedImageRequest): StoredTile | undefined {
  if (req.mirror || req.degrees !== 0) return undefined;
  const level = chooseLevel(cog.levels, req.region, req.width, req.height);
  const { width, height, blocks } = cog.levels[level];
  const format = blocks && PASSABLE[blocks.layout.compression];
  if (!blocks || format !== req.format) return undefined;
  const { tileWidth: tw, tileHeight: th, channels, params } = blocks.layout;
  if (params.samplesPerPixel !== channels) return undefined;
  if (format === "jpg" ? channels === 2 || channels === 4 : channels < 3) return undefined;
  if (req.quality !== "default" && !(req.quality === "color" && channels === 3)) return undefined;
  if (req.width !== tw || req.height !== th) return undefined;
  const sx = width / cog.width;
  const sy = height / cog.height;
  const x = req.region.x * sx;
  const y = req.region.y * sy;
  const exact = (v: number, want: number) => Math.abs(v - want) < EPSILON;
  const bx = Math.round(x / tw);
  const by = Math.round(y / th);
  if (!exact(x, bx * tw) || !exact(y, by * th)) return undefined;
  if (!exact(req.region.w * sx, tw) || !exact(req.region.h * sy, th)) return undefined;
  // A block reaching past the level's edge is padded in storage: not the requested picture.
  if ((bx + 1) * tw > width || (by + 1) * th > height) return undefined;
  return { level, bx, by, format };
}

/** The stored tile as a standalone image of its format; a tile that lies about its shape is a 502. */
export async function storedTile(cog: Cog, tile: StoredTile, signal: AbortSignal): Promise<EncodedAnswer> {
  return tile.format === "jpg"
    ? { ...(await storedJpeg(cog, tile, signal)), contentType: "image/jpeg" }
    : { body: await storedWebp(cog, tile, signal), contentType: "image/webp" };
}

async function storedWebp(cog: Cog, tile: StoredTile, signal: AbortSignal): Promise<Buffer> {
  const blocks = cog.levels[tile.level].blocks!;
  const stored = Buffer.from(await blocks.storedBlock(tile.bx, tile.by, signal));
  const { tileWidth, tileHeight } = blocks.layout;
  const isWebp = stored.toString("latin1", 0, 4) === "RIFF" && stored.toString("latin1", 8, 12) === "WEBP";
  // A header read only (no decode): the bitstream must declare exactly the block's size.
  const meta = isWebp ? await sharp(stored).metadata().catch(() => undefined) : undefined;
  if (meta?.width !== tileWidth || meta.height !== tileHeight) {
    const found = meta ? `${meta.width}x${meta.height}` : "no WebP header";
    throw malformed(cog.source.label, `WebP block is ${found}, declared ${tileWidth}x${tileHeight}`);
  }
  return stored;
}

/**
 * The stored bytes of `tile` as a standalone JPEG, read into reused memory that `done` gives
 * back once the answer is written. Its frame header must declare exactly the block's shape: a
 * lying tile is a 502, not a different picture passed on.
 */
async function storedJpeg(cog: Cog, tile: StoredTile, signal: AbortSignal): Promise<{ head?: Buffer; body: Buffer; done: () => void }> {
  const blocks = cog.levels[tile.level].blocks!;
  let taken: Buffer | undefined;
  const done = () => taken && storedBytes.giveBack(taken);
  try {
    const stored = await blocks.storedBlock(tile.bx, tile.by, signal, (bytes) => (taken = storedBytes.take(bytes)));
    const { tileWidth, tileHeight, params } = blocks.layout;
    const frame = jpegFrame(stored);
    if (frame?.width !== tileWidth || frame.height !== tileHeight || frame.components !== params.samplesPerPixel) {
      const found = frame ? `${frame.width}x${frame.height}x${frame.components}` : "no frame header";
      throw malformed(cog.source.label, `JPEG block is ${found}, declared ${tileWidth}x${tileHeight}x${params.samplesPerPixel}`);
    }
    const prefix = tablesPrefix(params.JPEGTables);
    const rest = tileSegments(stored); // there is one: the frame was found after an SOI
    if (!prefix || !rest) return { body: asBuffer(stored), done };
    return { head: asBuffer(prefix), body: asBuffer(rest), done };
  } catch (e) {
    done();
    throw e;
  }
}

/** A view, not a copy. */
const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
