// An opened Cloud-Optimized (or any tiled, pyramidal) TIFF: its levels, its SourceInfo, and
// windowed pixel reads at a chosen level. The structure is validated first (tiff-guard), then
// geotiff.js parses the IFDs; the common layouts are read block by block through a BlockReader
// (decoded-block cache, coalescing, the bounded codecs of codecs.ts), the rest through
// geotiff.js's readRasters with the same codecs. All I/O goes through a Source (via
// GeoTiffSource). Pixels come out as interleaved 8-bit samples (see pixels.ts). Sources of 16- and
// 32-bit integer or floating-point samples open too: map tiles read their bands raw (bands.ts);
// IIIF images of them are refused (501) by the 8-bit pipeline.

import { GeoTIFF, getDecoder, type GeoTIFFImage, type ImageFileDirectory } from "geotiff";
import { badGateway, HttpError, unsupported } from "../../shared/errors";
import type { SourceInfo } from "../../shared/protocol";
import type { Source } from "../source/source";
import { WorkBudget, type Reservation } from "../runtime/work-budget";
import { DecodedBlockCache, snapshotIdentity } from "./block-cache";
import { BlockReader, checkStoredRange, type LevelLayout } from "./block-reader";
import { readGeoreference, type SourceGeo } from "./georeference";
import { describeBands, type BandsDescription } from "./band-info";
import type { Log } from "../runtime/log";
import { blockBytes, blockParameters, codecOf, COMPRESSION, registerCodecs, unknownCompression, type BlockParameters } from "./codecs";
import type { Codec } from "../../shared/work";
import { GeoTiffSource, heldRead } from "./geotiff-source";
import { windowAtLevel, type LevelSize } from "../../shared/levels";
import { compactWindow, copyWindow, type PixelView, type Pixels } from "./pixels";
import { checkTiffStructure, malformed } from "./tiff-guard";
import type { ImageLimits, Rect } from "../../shared/iiif/resolve";
import { decodedSide, maxRenderArea } from "../../shared/cost";

/** [x0, y0, x1, y1) in one level's pixels. */
export type LevelWindow = [number, number, number, number];

/** Tile reads always carry a signal: that is how GeoTiffSource tells them from header reads. */
const NEVER_ABORTED = new AbortController().signal;
/** Header blocks kept per snapshot unless CogOptions.prefetchRing says otherwise. */
const DEFAULT_PREFETCH_RING = 8;

/** Largest image side served (GDAL's largest real mosaics are a few hundred thousand px). */
export const MAX_DIMENSION = 1 << 21;
/** Largest tile side; the TIFF spec's tiles are small multiples of 16. */
export const MAX_TILE_SIDE = 8192;
/** Most tiles one level may have (its tile tables stay under 32 MiB). */
export const MAX_TILES_PER_LEVEL = 1 << 22;

export interface CogOptions {
  /** Decoded-block cache shared by every COG of the process. */
  cache?: DecodedBlockCache;
  /** Work allowance direct reads reserve from (fail-fast). */
  budget?: WorkBudget;
  /** Header blocks (64 KiB) kept per snapshot; > 0 also prefetches the tile tables in the background. */
  prefetchRing?: number;
  /** Bound on each shared header or tile-table read (default 10 s); then 504. */
  sharedWorkTimeoutMs?: number;
  /**
   * Where a publisher's mistake found on opening is told (a georeference that cannot be placed):
   * the decoder's log, once per snapshot it opens; absent (a render thread's reopening, the
   * tessera command), nothing is said.
   */
  log?: Log;
}

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
  /** Block-level reads with the decoded-block cache, for the common layouts (else geotiff's readRasters). */
  blocks?: BlockReader;
  /** The level's transparency mask (GDAL writes one per level), when the file has them. */
  mask?: GeoTIFFImage;
  /** The mask's blocks through the decoded-block cache, when it is tiled as GDAL writes it. */
  maskBlocks?: BlockReader;
  /**
   * Every stored sample, of any type, through the decoded-block cache: what map reads take
   * where `blocks` does not hold their samples (16-bit, float, more bands than colour + alpha).
   */
  samples?: BlockReader;
}

export class Cog {
  private resolvedLimits: ImageLimits | undefined;
  /** What keeps the 8-bit pipeline from this source's samples, found once: every image request asks. */
  private unsupported: UnsupportedSamples[] | undefined;
  /** Its bands as /info reports them, read at open. */
  private bandsDescription: BandsDescription | undefined;

  private constructor(
    readonly source: Source,
    private readonly tiff: GeoTIFF,
    /** Full image first, then overviews in decreasing size. */
    readonly levels: CogLevel[],
    readonly budget: WorkBudget,
    /** Where the source lies, for map tiles; absent for a picture that is not georeferenced. */
    readonly geo: SourceGeo | undefined,
  ) {}

  /**
   * Validates the TIFF structure, parses every IFD and checks each level's dimensions and
   * tiling before any pixel is fetched. Throws HttpError for what we cannot serve.
   */
  static async open(source: Source, options: CogOptions = {}, signal?: AbortSignal): Promise<Cog> {
    const { tiff, images, levels } = await parseTiff(source, options, signal);
    for (const image of images) {
      const refused = unknownCompression(image.getFileDirectory().getValue("Compression") as number | undefined, source.label);
      if (refused) throw refused;
    }
    // The first image IFD is the full resolution; an "overview" larger than it would become
    // the image everybody is served.
    const full = images.find((image) => levels.some((l) => l.image === image))!;
    for (const level of levels) {
      checkGeometry(level, source.label);
      const refused = unreadableSamples(level.image, full);
      if (refused) throw refused;
      level.mask = images.find((image) => isMask(image) && image.getWidth() === level.width && image.getHeight() === level.height);
      if (level.image !== full && (level.width > full.getWidth() || level.height > full.getHeight())) {
        throw malformed(source.label, `overview ${images.indexOf(level.image)} (${level.width}x${level.height}) is larger than the full-resolution image (${full.getWidth()}x${full.getHeight()})`);
      }
    }
    const cache = options.cache ?? new DecodedBlockCache();
    const identity = snapshotIdentity(source);
    try {
      await Promise.all(
        levels.map(async (level, i) => {
          level.blocks = await blockReaderFor(source, `${identity}/${i}`, level, cache);
          if (!level.blocks) await checkRasterRanges(source, level);
          level.maskBlocks = level.mask && (await maskReaderFor(source, `${identity}/${i}/mask`, level, level.mask, cache));
          level.samples = await samplesReaderFor(source, `${identity}/${i}/samples`, level, cache);
        }),
      );
    } catch (e) {
      throw asHttpError(e, source);
    }
    const cog = new Cog(source, tiff, levels, options.budget ?? WorkBudget.global(), readGeoreference(full, levels, source.label, options.log));
    try {
      cog.bandsDescription = await describeBands(full, levels[0].mask !== undefined);
    } catch (e) {
      throw asHttpError(e, source);
    }
    if ((options.prefetchRing ?? DEFAULT_PREFETCH_RING) > 0) cog.prefetchTables();
    return cog;
  }

  get width(): number {
    return this.levels[0].width;
  }

  get height(): number {
    return this.levels[0].height;
  }

  /** Channels a render has: RGB and grey as stored (colour + alpha); other models become RGB. */
  get channels(): number {
    const full = this.levels[0].image;
    const photometric = full.getFileDirectory().getValue("PhotometricInterpretation");
    const stored = photometric === PHOTOMETRIC.rgb || photometric === PHOTOMETRIC.blackIsZero;
    return stored ? Math.min(full.getSamplesPerPixel(), 4) : 3;
  }

  /**
   * Samples a decoded block of the full level holds a pixel: a chunky block decodes every sample
   * it stores, however few a render uses; a planar read decodes the planes it uses.
   */
  get blockSamples(): number {
    const full = this.levels[0].image;
    const chunky = full.getFileDirectory().getValue("PlanarConfiguration") !== 2;
    return chunky ? Math.max(this.channels, full.getSamplesPerPixel()) : this.channels;
  }

  /** How the full level's blocks are stored, as the cost model counts their decode. */
  get codec(): Codec {
    return codecOf(this.levels[0].image.getFileDirectory().getValue("Compression") as number | undefined);
  }

  /**
   * What requests are resolved against: the size, and the largest output area this decoder
   * renders within its work budget (see maxRenderArea); the edge bounds what it declares by work too.
   */
  get limits(): ImageLimits {
    return (this.resolvedLimits ??= this.renderLimits());
  }

  private renderLimits(): ImageLimits {
    const full = this.levels[0];
    const shape = { levels: this.levels, tileWidth: full.tileWidth, tileHeight: full.tileHeight, codec: this.codec, blockSamples: this.blockSamples };
    // Its memory only: the work a request may take is the deadline it is given, which the edge
    // (the DO's REQUEST_TIMEOUT) applies to what it declares, and the decoder to what it runs.
    const maxArea = maxRenderArea(shape, this.channels, this.codec, { bytes: this.budget.limitBytes, work: Infinity });
    return { width: full.width, height: full.height, maxArea };
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
      maxArea: this.limits.maxArea,
      channels: this.channels,
      codec: this.codec,
      georeference: this.geo?.info,
      ...(this.bandsDescription && { bands: this.bandsDescription.bands, nodataType: this.bandsDescription.nodataType }),
      ...(this.source.access && { access: this.source.access }),
      ...(this.source.description && { description: this.source.description }),
    };
  }

  /** Why the 8-bit IIIF pipeline cannot render this source (501), or undefined when it can. */
  get imageRefusal(): HttpError | undefined {
    this.unsupported ??= unsupportedSamples(this.levels[0].image);
    return this.unsupported[0]?.error;
  }

  /**
   * Work memory (bytes) reading `window` of level `index` takes: its blocks, stored and decoded
   * (a JPEG block in whole MCUs), and the window.
   */
  windowCost(index: number, window: LevelWindow): number {
    const { tileWidth: tw, tileHeight: th, blocks: reader } = this.levels[index];
    const [x0, y0, x1, y1] = window;
    const blocks = (Math.ceil(x1 / tw) - Math.floor(x0 / tw)) * (Math.ceil(y1 / th) - Math.floor(y0 / th));
    const perPixel = reader ? reader.blockBytes / (tw * th) : 4;
    const blockBytes = Math.ceil(perPixel * decodedSide(tw, this.codec) * decodedSide(th, this.codec));
    return blocks * 2 * blockBytes + (x1 - x0) * (y1 - y0) * 4;
  }

  /**
   * Reads `region` (full-resolution pixels) from level `index` at that level's resolution.
   * Inside a public request, `work` is the request's admitted reservation; a direct call
   * reserves its own, fail-fast (ResourceLimitError when the allowance is taken).
   */
  async readWindow(index: number, region: Rect, signal: AbortSignal = NEVER_ABORTED, work?: Reservation): Promise<Pixels> {
    const view = await this.readWindowView(index, region, signal, work);
    try {
      // Copied out even when the window is the whole block: a cached block's memory is reused
      // once it is evicted, and these pixels outlive this call.
      return view.release ? copyWindow(view) : compactWindow(view);
    } finally {
      view.release?.();
    }
  }

  /** As readWindow, but a window inside one cached block comes as that block plus a crop, uncopied. */
  readWindowView(index: number, region: Rect, signal: AbortSignal = NEVER_ABORTED, work?: Reservation): Promise<PixelView> {
    return this.readLevelWindow(index, windowAtLevel(this.levels[0], this.levels[index], region), signal, work);
  }

  /**
   * As readWindowView, for `window` given in the level's own pixels (a band of a strip render).
   * With `into` (room for the window), the blocks are copied there rather than into new memory.
   */
  async readLevelWindow(index: number, window: LevelWindow, signal: AbortSignal = NEVER_ABORTED, work?: Reservation, into?: Uint8Array): Promise<PixelView> {
    const own = work ? undefined : this.budget.tryReserve(this.windowCost(index, window), `reading ${this.source.label}`);
    const level = this.levels[index];
    const width = window[2] - window[0];
    const height = window[3] - window[1];
    try {
      // A colour reader's windows are 8-bit pixels of 1 to 4 channels (blockReaderFor).
      if (level.blocks) return (await level.blocks.read(window, signal, (work ?? own)!, into)) as PixelView;
      // Tile reads abort on the signal; shared header reads (tile tables) finish for the
      // next request, but this caller stops waiting for them at once. The read keeps a share of
      // the reservation until what it started has settled.
      const read = (options: RasterOptions) => readInterleaved(level.image, window, options);
      const { data, channels } = await heldRead(read, signal, (work ?? own)!.share());
      if (data.length !== width * height * channels) {
        throw malformed(this.source.label, "a decoded block has the wrong size");
      }
      into?.set(data);
      return { data: into ? into.subarray(0, data.length) : data, width, height, channels, sampleBytes: 1, crop: { left: 0, top: 0, width, height } };
    } catch (e) {
      if (signal.aborted) throw signal.reason ?? e;
      throw asHttpError(e, this.source);
    } finally {
      own?.release();
    }
  }

  /**
   * Loads every level's tile tables in the background, so the first tile request does not wait
   * for them. Skipped when foreground work owns any of the allowance (it never competes), and
   * reserved fail-fast like any direct read.
   */
  private prefetchTables(): void {
    if (this.budget.usedBytes > 0) return;
    let hold: Reservation;
    try {
      hold = this.budget.tryReserve(this.levels.length * 65536, `prefetching ${this.source.label}`);
    } catch {
      return;
    }
    void Promise.allSettled(this.levels.map((l) => l.blocks?.tables())).finally(() => hold.release());
  }

  async close(): Promise<void> {
    await this.tiff.close();
  }
}

/** What a held read passes geotiff.js (see heldRead). */
type RasterOptions = Parameters<Parameters<typeof heldRead>[0]>[0];

/** Reads an interleaved 8-bit window, converting other colour spaces to RGB. */
async function readInterleaved(
  image: GeoTIFFImage,
  window: number[],
  options: RasterOptions,
): Promise<{ data: Uint8Array; channels: 1 | 2 | 3 | 4 }> {
  const photometric = image.getFileDirectory().getValue("PhotometricInterpretation");
  const alpha = hasAlpha(image);
  if (photometric === PHOTOMETRIC.rgb || photometric === PHOTOMETRIC.blackIsZero) {
    const colour = photometric === PHOTOMETRIC.rgb ? 3 : 1;
    const samples = Array.from({ length: colour + (alpha ? 1 : 0) }, (_, i) => i);
    const data = await image.readRasters({ window, samples, interleave: true, ...options });
    return { data: asBytes(data), channels: samples.length as 1 | 2 | 3 | 4 };
  }
  // YCbCr (JPEG-compressed COGs), palette, CMYK, CIELab, WhiteIsZero: geotiff converts to RGB.
  const data = await image.readRGB({ window, interleave: true, ...options });
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

/** A TIFF whose structure passed tiff-guard, as geotiff.js parsed it. */
export interface ParsedTiff {
  tiff: GeoTIFF;
  /** Every IFD in file order, transparency masks included. */
  images: GeoTIFFImage[];
  /** The image levels: full resolution first, then overviews in decreasing size. */
  levels: CogLevel[];
}

/**
 * Validates the TIFF structure, then parses every IFD and lists the image levels; checks
 * nothing else (Cog.open does), so a validator can report every other problem at once.
 */
export async function parseTiff(source: Source, options: CogOptions = {}, signal?: AbortSignal): Promise<ParsedTiff> {
  await registerCodecs();
  const adapter = new GeoTiffSource(source, {
    maxBlocks: Math.max(1, options.prefetchRing ?? DEFAULT_PREFETCH_RING),
    sharedReadTimeoutMs: options.sharedWorkTimeoutMs,
  });
  let tiff: GeoTIFF;
  let images: GeoTIFFImage[];
  try {
    const ifds = await checkTiffStructure((o, n) => adapter.read(o, n), source.size, source.label);
    // geotiff.js's types name its own BaseSource class; ours has the same shape.
    tiff = await GeoTIFF.fromSource(adapter as unknown as Parameters<typeof GeoTIFF.fromSource>[0], {}, signal);
    images = await Promise.all(Array.from({ length: ifds }, (_, i) => tiff.getImage(i)));
  } catch (e) {
    throw asHttpError(e, source);
  }
  const levels = images
    .filter((img) => !isMask(img))
    .map((image) => ({
      width: image.getWidth(),
      height: image.getHeight(),
      tileWidth: image.getTileWidth(),
      tileHeight: image.getTileHeight(),
      image,
    }) as CogLevel)
    .sort((a, b) => b.width - a.width || b.height - a.height);
  if (levels.length === 0) throw malformed(source.label, "no image");
  return { tiff, images, levels };
}

function isMask(image: GeoTIFFImage): boolean {
  return ((image.getFileDirectory().getValue("NewSubfileType") ?? 0) & SUBFILE_MASK) !== 0;
}

/** Dimensions and tiling the arithmetic below can trust (no overflow, no absurd allocations). */
function checkGeometry(level: CogLevel, label: string): void {
  const { width, height, tileWidth, tileHeight } = level;
  const sides = [width, height, tileWidth, tileHeight];
  if (!sides.every((n) => Number.isSafeInteger(n) && n > 0)) throw malformed(label, `dimensions ${width}x${height} (tiles ${tileWidth}x${tileHeight})`);
  if (width > MAX_DIMENSION || height > MAX_DIMENSION) throw malformed(label, `${width}x${height} pixels exceeds the ${MAX_DIMENSION}-pixel side limit`);
  if (tileWidth > MAX_TILE_SIDE || tileHeight > MAX_TILE_SIDE) throw malformed(label, `${tileWidth}x${tileHeight} tiles exceed ${MAX_TILE_SIDE} pixels`);
  const tiles = Math.ceil(width / tileWidth) * Math.ceil(height / tileHeight);
  if (tiles > MAX_TILES_PER_LEVEL) throw malformed(label, `${tiles} tiles in one level exceeds ${MAX_TILES_PER_LEVEL}`);
}

/**
 * A BlockReader for the layouts that decode straight to interleaved 8-bit colour (+ alpha):
 * tiled, chunky, gray or RGB, or YCbCr stored as JPEG (libjpeg converts it to RGB). Other
 * layouts (strips, planar, palette, CMYK, Lab, samples of other types) go through geotiff.js's
 * readRasters.
 */
async function blockReaderFor(source: Source, keyPrefix: string, level: CogLevel, cache: DecodedBlockCache): Promise<BlockReader | undefined> {
  const dir = level.image.getFileDirectory();
  const compression = (dir.getValue("Compression") as number | undefined) ?? COMPRESSION.none;
  const photometric = dir.getValue("PhotometricInterpretation") as number;
  const params = await blockParameters(dir);
  const direct =
    photometric === PHOTOMETRIC.blackIsZero ||
    photometric === PHOTOMETRIC.rgb ||
    (photometric === PHOTOMETRIC.ycbcr && compression === COMPRESSION.jpeg);
  if (!dir.hasTag("TileWidth") || params.planarConfiguration !== 1 || !direct || unsupportedSamples(level.image).length > 0) return undefined;
  const colour = photometric === PHOTOMETRIC.blackIsZero ? 1 : 3;
  const channels = (colour + (hasAlpha(level.image) ? 1 : 0)) as 1 | 2 | 3 | 4;
  if (params.samplesPerPixel < channels) return undefined;
  return readerOf(source, keyPrefix, level, dir, params, compression, channels, cache);
}

/**
 * A reader of every stored sample of a tiled, chunky level (any sample type) for map reads,
 * when the colour reader does not hold them all: a DEM's or a 16-bit source's blocks are then
 * inflated once and kept, not decoded again by every tile through geotiff.js. Samples wider
 * than a byte are viewed in place, so only little-endian files (GDAL's on every common
 * machine) take it; JPEG levels have the colour reader.
 */
async function samplesReaderFor(source: Source, keyPrefix: string, level: CogLevel, cache: DecodedBlockCache): Promise<BlockReader | undefined> {
  const dir = level.image.getFileDirectory();
  const compression = (dir.getValue("Compression") as number | undefined) ?? COMPRESSION.none;
  const params = await blockParameters(dir);
  const bits = params.bitsPerSample[0];
  const chunky = params.planarConfiguration === 1 || params.samplesPerPixel === 1;
  const held = (level.blocks?.layout.channels ?? 0) >= params.samplesPerPixel;
  if (held || !dir.hasTag("TileWidth") || !chunky || compression === COMPRESSION.jpeg || bits % 8 !== 0 || (bits > 8 && !level.image.littleEndian)) return undefined;
  return readerOf(source, keyPrefix, level, dir, params, compression, params.samplesPerPixel, cache, bits / 8);
}

/**
 * A block reader for a level's transparency mask, so that a tile's mask blocks are inflated
 * once and kept with the image's: GDAL writes masks tiled, one sample of 1 bit (unpacked to a
 * byte a pixel when decoded) or 8 bits. Else undefined, and the mask is read through geotiff.js.
 */
async function maskReaderFor(source: Source, keyPrefix: string, level: CogLevel, mask: GeoTIFFImage, cache: DecodedBlockCache): Promise<BlockReader | undefined> {
  const dir = mask.getFileDirectory();
  const params = await blockParameters(dir);
  const bits = params.bitsPerSample[0];
  if (!dir.hasTag("TileWidth") || params.samplesPerPixel !== 1 || (bits !== 1 && bits !== 8) || (bits === 1 && params.predictor !== 1)) return undefined;
  const compression = (dir.getValue("Compression") as number | undefined) ?? COMPRESSION.none;
  return readerOf(source, keyPrefix, { width: level.width, height: level.height, tileWidth: params.tileWidth, tileHeight: params.tileHeight }, dir, params, compression, 1, cache);
}

async function readerOf(
  source: Source,
  keyPrefix: string,
  size: Pick<CogLevel, "width" | "height" | "tileWidth" | "tileHeight">,
  dir: ImageFileDirectory,
  params: BlockParameters,
  compression: number,
  channels: LevelLayout["channels"],
  cache: DecodedBlockCache,
  sampleBytes = 1,
): Promise<BlockReader> {
  const decoder = await getDecoder(compression, params as never);
  const { width, height, tileWidth, tileHeight } = size;
  return new BlockReader(source, keyPrefix, { width, height, tileWidth, tileHeight, params, compression, channels, sampleBytes }, dir, decoder, cache);
}

/**
 * Checks every stored block's byte range of a level read through geotiff.js's readRasters
 * (strips, or tiles of other layouts), which trusts them: a byte count past the end of the
 * object would otherwise be fetched, or decoded short, as if it were data.
 */
async function checkRasterRanges(source: Source, level: CogLevel): Promise<void> {
  const dir = level.image.getFileDirectory();
  const tiled = dir.hasTag("TileWidth");
  const noun = tiled ? "block" : "strip";
  const tables = tiled ? (["TileOffsets", "TileByteCounts"] as const) : (["StripOffsets", "StripByteCounts"] as const);
  const [offsets, counts] = (await Promise.all(tables.map((tag) => dir.loadValue(tag)))) as (ArrayLike<number | bigint> | undefined)[];
  if (!offsets || !counts || offsets.length !== counts.length) {
    throw malformed(source.label, `${offsets?.length ?? 0} ${noun} offsets and ${counts?.length ?? 0} byte counts`);
  }
  const decoded = blockBytes(await blockParameters(dir));
  for (let i = 0; i < offsets.length; i++) checkStoredRange(source, noun, i, Number(offsets[i]), Number(counts[i]), decoded);
}

/** Sample types map tiles read: integers of 8, 16 or 32 bits, signed or not, and 32- or 64-bit floats. */
const READABLE_BITS: Record<number, number[]> = { 1: [8, 16, 32], 2: [8, 16, 32], 3: [32, 64] };

/**
 * Why no route can serve `image` (501), or undefined: samples of a type or layout neither the
 * IIIF pipeline nor map tiles read, a photometric interpretation not decoded, too few samples,
 * or a level whose samples differ from the full image's.
 */
export function unreadableSamples(image: GeoTIFFImage, full: GeoTIFFImage): HttpError | undefined {
  const structural = unsupportedSamples(image).find((p) => p.property === "photometric" || p.property === "samples_per_pixel");
  if (structural) return structural.error;
  const { bits, formats } = sampleFields(image);
  const readable = bits.every((b, i) => READABLE_BITS[formats[i] ?? formats[0]]?.includes(b));
  if (!readable || new Set(bits).size > 1 || new Set(formats).size > 1) {
    return unsupported(`sources with ${describeSamples(bits, formats)} samples are not supported (8-, 16- or 32-bit integers, 32- or 64-bit floats, the same in every band)`);
  }
  const same = sampleFields(full);
  if (image.getSamplesPerPixel() !== full.getSamplesPerPixel() || same.bits[0] !== bits[0] || same.formats[0] !== formats[0]) {
    return unsupported("an overview whose samples differ from the full-resolution image's is not supported");
  }
  return undefined;
}

function sampleFields(image: GeoTIFFImage): { bits: number[]; formats: number[] } {
  const dir = image.getFileDirectory();
  return {
    bits: Array.from((dir.getValue("BitsPerSample") as ArrayLike<number> | undefined) ?? [1]),
    formats: Array.from((dir.getValue("SampleFormat") as ArrayLike<number> | undefined) ?? [1]),
  };
}

const FORMAT_NAMES: Record<number, string> = { 1: "unsigned", 2: "signed", 3: "floating-point", 4: "untyped", 5: "complex integer", 6: "complex floating-point" };
const describeSamples = (bits: number[], formats: number[]) =>
  `${[...new Set(bits)].join("/")}-bit ${[...new Set(formats)].map((f) => FORMAT_NAMES[f] ?? `format ${f}`).join("/")}`;

/** A property of an image the 8-bit pipeline cannot serve, and the 501 the decoder answers with. */
export interface UnsupportedSamples {
  property: "bit_depth" | "sample_format" | "photometric" | "samples_per_pixel";
  error: HttpError;
}

/** Every reason the 8-bit pipeline cannot serve `image` (none when it can), in the order the decoder checks them. */
export function unsupportedSamples(image: GeoTIFFImage): UnsupportedSamples[] {
  const dir = image.getFileDirectory();
  const bits = Array.from((dir.getValue("BitsPerSample") as ArrayLike<number> | undefined) ?? [1]);
  const formats = Array.from((dir.getValue("SampleFormat") as ArrayLike<number> | undefined) ?? [1]);
  const found: UnsupportedSamples[] = [];
  if (!bits.every((b) => b === 8)) {
    found.push({ property: "bit_depth", error: unsupported(`IIIF images of sources with ${[...new Set(bits)].join("/")}-bit samples are not supported (8-bit only; map tiles serve them)`) });
  }
  if (!formats.every((f) => f === 1)) {
    found.push({ property: "sample_format", error: unsupported("IIIF images of sources with signed or floating-point samples are not supported (unsigned 8-bit only; map tiles serve them)") });
  }
  const photometric = dir.getValue("PhotometricInterpretation");
  if (!Object.values(PHOTOMETRIC).includes(photometric as number)) {
    found.push({ property: "photometric", error: unsupported(`TIFF photometric interpretation ${photometric} is not supported`) });
    return found;
  }
  // Extra samples beyond colour and alpha are ignored: reads select samples explicitly.
  const colour = photometric === PHOTOMETRIC.blackIsZero || photometric === PHOTOMETRIC.whiteIsZero ? 1 : 3;
  const needed = photometric === PHOTOMETRIC.palette ? 1 : photometric === PHOTOMETRIC.cmyk ? 4 : colour;
  if (image.getSamplesPerPixel() < needed) {
    found.push({ property: "samples_per_pixel", error: unsupported(`${image.getSamplesPerPixel()} samples per pixel is too few for photometric ${photometric}`) });
  }
  return found;
}

/**
 * Failures of parsing or decoding: HttpErrors pass through; geotiff.js's own errors are a 501
 * (a feature it lacks) or a 502, their words (and the source's label) for the log alone.
 */
export function asHttpError(e: unknown, source: Source): HttpError {
  if (e instanceof HttpError) return e;
  const message = e instanceof Error ? e.message : String(e);
  if (/unsupported/i.test(message)) return unsupported("this source uses a TIFF feature the decoder does not read", `${source.label}: ${message}`);
  return badGateway("unreadable TIFF", `${source.label}: unreadable TIFF (${message})`);
}
