// A warped tile made into an image: each band's values mapped linearly to 0–255 (the request's
// rescale; else 8-bit data as stored, other integers over their type's range; float data needs
// a rescale, 400), one band as grey, three as RGB; alpha in png and webp, where a pixel is
// opaque only when every rendered band is valid there; black where one is not in jpg, which has
// no alpha. Encoded by sharp, as IIIF answers are.
import sharp from "sharp";
import { badRequest } from "../../shared/errors";
import { CONTENT_TYPES, type TileFormat } from "../../shared/maps/tile-request";
import type { StyleFields } from "../../shared/maps/style";
import type { Cog } from "../cog/cog";
import { sampleType, type SampleType } from "../cog/bands";
import { encoderFor } from "../encode/formats";
import type { Slices } from "../runtime/slices";
import { colorize, type TileChannels } from "./colorize";

/**
 * Map tiles' PNG: rows filtered adaptively, zlib level 5. Measured with sharp on 234 tiles of
 * the UTM RGB fixture: unfiltered level 6 (sharp's default) 38.9 KB in 2.7 ms a tile; adaptive
 * filtering at level 6 (GDAL's libpng) 22.3 KB in 6.7 ms, at 5 23.1 KB in 4.1 ms, at 3 25.1 KB in
 * 3.6 ms; a palette 10.9 KB but lossy and 54 ms. A tile is encoded once and sent on every view,
 * so 40 % fewer bytes are worth 1.4 ms; level 6's last 3 % are not worth 2.6 ms more.
 */
const TILE_PNG = { adaptiveFiltering: true, compressionLevel: 5 };

export interface RenderedTile {
  body: Buffer;
  contentType: string;
}


/**
 * The [min, max] each rendered channel maps to 0–255: the request's rescale, else the values'
 * own range (`natural`, asked only then); undefined where an explicit or interval colour map
 * without rescale reads the raw values. 400 for rescale ranges that are neither one nor one per
 * rendered channel (the URL checks that when it tells the count; without bidx or an expression,
 * only the source knows). Checked before any read.
 */
export function valueRanges(req: StyleFields, channels: number, natural: () => [number, number]): [number, number][] | undefined {
  if (req.rescale && req.rescale.length !== 1 && req.rescale.length !== channels) {
    throw badRequest(`rescale gives ${req.rescale.length} ranges for the ${channels} band${channels === 1 ? "" : "s"} rendered; give one for all, or one per band`);
  }
  if (req.rescale) return Array.from({ length: channels }, (_, i) => req.rescale![req.rescale!.length === 1 ? 0 : i]);
  if (req.colormap) return undefined;
  const range = natural();
  return Array.from({ length: channels }, () => range);
}

/** The values `cog`'s samples hold: 8-bit as stored, other integers over their type; 400 for floats, which need a rescale. */
export function sampleRange(cog: Cog): [number, number] {
  const type = sampleType(cog.levels[0].image);
  if (type.kind === "float") {
    throw badRequest(`the source's samples are ${type.bits}-bit floating point: give rescale=min,max to map them to 0–255, or a colormap of their values`);
  }
  return typeRange(type);
}

/** The values an integer sample type holds. */
function typeRange({ kind, bits }: SampleType): [number, number] {
  return kind === "int" ? [-(2 ** (bits - 1)), 2 ** (bits - 1) - 1] : [0, 2 ** bits - 1];
}

/**
 * The channels as 8-bit grey or RGB, with alpha where the format has it, encoded; run once, after
 * any reduction. The colouring runs in `slices`; the encoding on libuv's threads. `lossless`: webp
 * keeps every value (jpg is refused before for such a request).
 */
export async function encodeTile(channels: TileChannels, req: StyleFields & { format: TileFormat }, ranges: [number, number][] | undefined, slices: Slices, lossless = false): Promise<RenderedTile> {
  const encoder = encoderFor(req.format);
  const { data, colours, alpha } = await colorize(channels, req, ranges, encoder.alpha, slices);
  const img = sharp(data, { raw: { width: channels.width, height: channels.height, channels: (colours + (alpha ? 1 : 0)) as 1 | 2 | 3 | 4 } });
  // One channel stays grey (with alpha) in the file, not expanded to RGB.
  const pixels = colours === 1 ? img.toColourspace("b-w") : img;
  // An exact encoding (heights as RGB) must come back bit for bit: webp without loss.
  const body = req.format === "png" ? await pixels.png(TILE_PNG).toBuffer() : lossless && req.format === "webp" ? await pixels.webp({ lossless: true }).toBuffer() : await encoder.encode(pixels);
  return { body, contentType: CONTENT_TYPES[req.format] };
}
