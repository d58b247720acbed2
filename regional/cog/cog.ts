// An opened Cloud-Optimized (or any tiled, pyramidal) TIFF: its levels, its SourceInfo, and
// windowed pixel reads at a chosen level. Header parsing and tile decoding are geotiff.js;
// all I/O goes through a Source (via GeoTiffSource). Pixels come out as interleaved 8-bit
// samples: 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA) channels.

import { GeoTIFF, type GeoTIFFImage } from "geotiff";
import { HttpError, unsupported } from "../../shared/errors";
import type { SourceInfo } from "../../shared/protocol";
import type { Source } from "../source/source";
import { untilAborted } from "../abort";
import { GeoTiffSource } from "./geotiff-source";
import { windowAtLevel, type LevelSize } from "./levels";
import type { Rect } from "../../shared/iiif/resolve";

/** Tile reads always carry a signal: that is how GeoTiffSource tells them from header reads. */
const NEVER_ABORTED = new AbortController().signal;

/** TIFF PhotometricInterpretation values we decode. */
const PHOTOMETRIC = { whiteIsZero: 0, blackIsZero: 1, rgb: 2, palette: 3, cmyk: 5, ycbcr: 6, cieLab: 8 };
/** NewSubfileType bit marking a transparency mask IFD (not an image level). */
const SUBFILE_MASK = 4;
/** ExtraSamples values that mean alpha (associated, unassociated). */
const ALPHA_EXTRA_SAMPLES = new Set([1, 2]);

export interface CogLevel extends LevelSize {
  tileWidth: number;
  tileHeight: number;
  /** The geotiff.js image of this level. */
  image: GeoTIFFImage;
}

export interface Pixels {
  data: Uint8Array;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
}

export class Cog {
  private constructor(
    readonly source: Source,
    private readonly tiff: GeoTIFF,
    /** Full image first, then overviews in decreasing size. */
    readonly levels: CogLevel[],
  ) {}

  /** Parses the header and every IFD of `source`. Throws HttpError for what we cannot serve. */
  static async open(source: Source, signal?: AbortSignal): Promise<Cog> {
    const adapter = new GeoTiffSource(source);
    let tiff: GeoTIFF;
    let images: GeoTIFFImage[];
    try {
      // geotiff.js's types name its own BaseSource class; ours has the same shape.
      tiff = await GeoTIFF.fromSource(adapter as unknown as Parameters<typeof GeoTIFF.fromSource>[0], {}, signal);
      const count = await tiff.getImageCount();
      images = await Promise.all(Array.from({ length: count }, (_, i) => tiff.getImage(i)));
    } catch (e) {
      throw asHttpError(e, source);
    }
    const levels = images
      .filter((img) => ((img.getFileDirectory().getValue("NewSubfileType") ?? 0) & SUBFILE_MASK) === 0)
      .map((image) => ({
        width: image.getWidth(),
        height: image.getHeight(),
        tileWidth: image.getTileWidth(),
        tileHeight: image.getTileHeight(),
        image,
      }))
      .sort((a, b) => b.width - a.width || b.height - a.height);
    if (levels.length === 0 || levels[0].width <= 0 || levels[0].height <= 0) {
      throw new HttpError("bad_gateway", `${source.label}: TIFF has no image`);
    }
    for (const level of levels) checkSamples(level.image);
    return new Cog(source, tiff, levels);
  }

  get width(): number {
    return this.levels[0].width;
  }

  get height(): number {
    return this.levels[0].height;
  }

  info(id: string): SourceInfo {
    const full = this.levels[0];
    return {
      id,
      version: this.source.version,
      width: full.width,
      height: full.height,
      tileWidth: full.tileWidth,
      tileHeight: full.tileHeight,
      levels: this.levels.map(({ width, height }) => ({ width, height })),
      bytes: this.source.size,
    };
  }

  /** Reads `region` (full-resolution pixels) from level `index` at that level's resolution. */
  async readWindow(index: number, region: Rect, signal: AbortSignal = NEVER_ABORTED): Promise<Pixels> {
    const level = this.levels[index];
    const window = windowAtLevel(this.levels[0], level, region);
    const width = window[2] - window[0];
    const height = window[3] - window[1];
    try {
      // Tile reads abort on the signal; shared header reads (tile tables) finish for the
      // next request, but this caller stops waiting for them at once.
      const { data, channels } = await untilAborted(readInterleaved(level.image, window, signal), signal);
      if (data.length !== width * height * channels) {
        throw new HttpError("bad_gateway", `${this.source.label}: decoded block has the wrong size`);
      }
      return { data, width, height, channels };
    } catch (e) {
      if (signal.aborted) throw signal.reason ?? e;
      throw asHttpError(e, this.source);
    }
  }

  async close(): Promise<void> {
    await this.tiff.close();
  }
}

/** Reads an interleaved 8-bit window, converting other colour spaces to RGB. */
async function readInterleaved(
  image: GeoTIFFImage,
  window: number[],
  signal?: AbortSignal,
): Promise<{ data: Uint8Array; channels: 1 | 2 | 3 | 4 }> {
  const photometric = image.getFileDirectory().getValue("PhotometricInterpretation");
  const alpha = hasAlpha(image);
  if (photometric === PHOTOMETRIC.rgb || photometric === PHOTOMETRIC.blackIsZero) {
    const colour = photometric === PHOTOMETRIC.rgb ? 3 : 1;
    const samples = Array.from({ length: colour + (alpha ? 1 : 0) }, (_, i) => i);
    const data = await image.readRasters({ window, samples, interleave: true, signal });
    return { data: asBytes(data), channels: samples.length as 1 | 2 | 3 | 4 };
  }
  // YCbCr (JPEG-compressed COGs), palette, CMYK, CIELab, WhiteIsZero: geotiff converts to RGB.
  const data = await image.readRGB({ window, interleave: true, signal });
  return { data: asBytes(data), channels: 3 };
}

function asBytes(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return data;
  // geotiff's colour-space conversions (readRGB) produce Uint8ClampedArray.
  if (data instanceof Uint8ClampedArray) return new Uint8Array(data.buffer, data.byteOffset, data.length);
  throw new HttpError("bad_gateway", "decoder returned non-8-bit samples");
}

function hasAlpha(image: GeoTIFFImage): boolean {
  const extra = image.getFileDirectory().getValue("ExtraSamples") as ArrayLike<number> | number | undefined;
  if (extra === undefined) return false;
  const first = typeof extra === "number" ? extra : extra[0];
  return ALPHA_EXTRA_SAMPLES.has(first);
}

/** Rejects what the 8-bit pipeline cannot serve, naming the reason (501). */
function checkSamples(image: GeoTIFFImage): void {
  const dir = image.getFileDirectory();
  const bits = Array.from((dir.getValue("BitsPerSample") as ArrayLike<number> | undefined) ?? [1]);
  const formats = Array.from((dir.getValue("SampleFormat") as ArrayLike<number> | undefined) ?? [1]);
  if (!bits.every((b) => b === 8)) {
    throw unsupported(`sources with ${[...new Set(bits)].join("/")}-bit samples are not supported (8-bit only)`);
  }
  if (!formats.every((f) => f === 1)) {
    throw unsupported("sources with signed or floating-point samples are not supported (unsigned 8-bit only)");
  }
  const photometric = dir.getValue("PhotometricInterpretation");
  if (!Object.values(PHOTOMETRIC).includes(photometric as number)) {
    throw unsupported(`TIFF photometric interpretation ${photometric} is not supported`);
  }
  // Extra samples beyond colour and alpha are ignored: reads select samples explicitly.
  const colour = photometric === PHOTOMETRIC.blackIsZero || photometric === PHOTOMETRIC.whiteIsZero ? 1 : 3;
  const needed = photometric === PHOTOMETRIC.palette ? 1 : photometric === PHOTOMETRIC.cmyk ? 4 : colour;
  if (image.getSamplesPerPixel() < needed) {
    throw unsupported(`${image.getSamplesPerPixel()} samples per pixel is too few for photometric ${photometric}`);
  }
}

/** Failures of parsing or decoding: HttpErrors pass through, anything else is a 502. */
function asHttpError(e: unknown, source: Source): HttpError {
  if (e instanceof HttpError) return e;
  const message = e instanceof Error ? e.message : String(e);
  if (/unknown compression|unsupported/i.test(message)) {
    return unsupported(`${source.label}: ${message}`);
  }
  return new HttpError("bad_gateway", `${source.label}: unreadable TIFF (${message})`);
}
