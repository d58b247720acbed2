// Raw band reads for map tiles: the samples of the bands a tile renders over one level's window,
// as planes (8-bit samples as bytes, others as floats), each with its validity. A pixel is
// invalid where the level's transparency mask (GDAL writes one per level) or an alpha band says
// so, where its value is the nodata value (the request's, else the file's GDAL_NODATA), or
// where it is NaN. Tiled chunky levels of every sample type go through the block readers
// (decoded-block cache, coalesced reads); everything else (strips, planar, big-endian) through
// geotiff.js's readRasters with the bounded codecs. Every read goes through the Source and stops
// at the signal.
import type { GeoTIFFImage } from "geotiff";
import { heldRead } from "./geotiff-source";
import type { Reservation } from "../runtime/work-budget";
import { asHttpError, type Cog, type LevelWindow } from "./cog";
import { compactWindow, copyWindow, type BlockView, type PixelView } from "./pixels";

export type SampleKind = "uint" | "int" | "float";

/**
 * One band of a window read: its values and where they are valid (1) or not (0). 8-bit samples
 * stay bytes: any float sum of them is the same as of their floats, in a quarter of the memory.
 */
export interface Plane {
  width: number;
  height: number;
  values: Float32Array | Uint8Array;
  valid: Uint8Array;
}

/** What a source's samples are: every band shares one type. */
export interface SampleType {
  kind: SampleKind;
  bits: number;
}

const KINDS: Record<number, SampleKind> = { 1: "uint", 2: "int", 3: "float" };
/** PhotometricInterpretation values whose first three samples are colour (RGB, and YCbCr decoded to RGB). */
const COLOUR_PHOTOMETRICS = new Set([2, 6]);
/** ExtraSamples values that mean alpha (associated, unassociated). */
const ALPHA = new Set([1, 2]);

export function sampleType(image: GeoTIFFImage): SampleType {
  const dir = image.getFileDirectory();
  const bits = (dir.getValue("BitsPerSample") as ArrayLike<number> | undefined)?.[0] ?? 1;
  const format = (dir.getValue("SampleFormat") as ArrayLike<number> | undefined)?.[0] ?? 1;
  return { kind: KINDS[format] ?? "uint", bits };
}

/** The bands a source has: how many, the ones rendered by default (one-based), its alpha band's index. */
export interface BandLayout {
  count: number;
  defaults: number[];
  /** Zero-based sample index of the alpha band. */
  alpha?: number;
}

export function bandLayout(image: GeoTIFFImage): BandLayout {
  const dir = image.getFileDirectory();
  const count = image.getSamplesPerPixel();
  const colour = COLOUR_PHOTOMETRICS.has(dir.getValue("PhotometricInterpretation") as number) && count >= 3 ? 3 : 1;
  const extra = dir.getValue("ExtraSamples") as ArrayLike<number> | number | undefined;
  const first = typeof extra === "number" ? extra : extra?.[0];
  const alpha = first !== undefined && ALPHA.has(first) && count > colour ? colour : undefined;
  return { count, defaults: colour === 3 ? [1, 2, 3] : [1], ...(alpha !== undefined && { alpha }) };
}

/**
 * Reads one-based `bands` of level `index` over `window`. `nodata` overrides the file's value.
 * `work` is the request's reservation (shared by the block fetches and geotiff.js reads that outlive a cancel).
 */
export async function readBands(
  cog: Cog,
  index: number,
  window: LevelWindow,
  bands: number[],
  nodata: number | undefined,
  signal: AbortSignal,
  work: Reservation,
): Promise<Plane[]> {
  const level = cog.levels[index];
  const layout = bandLayout(level.image);
  const width = window[2] - window[0];
  const height = window[3] - window[1];
  const samples = [...new Set([...bands.map((b) => b - 1), ...(layout.alpha === undefined ? [] : [layout.alpha])])];
  try {
    const [raw, mask] = await Promise.all([readSamples(cog, index, window, samples, signal, work), readMask(cog, index, window, signal, work)]);
    // Where the mask or the alpha band hides the pixel, every band is invalid.
    const common = new Uint8Array(width * height).fill(1);
    if (mask) and(common, mask);
    if (layout.alpha !== undefined) and(common, raw[samples.indexOf(layout.alpha)]);
    const type = sampleType(level.image);
    const missing = nodata ?? level.image.getGDALNoData() ?? undefined;
    return bands.map((band) => {
      const values = planeValues(raw[samples.indexOf(band - 1)]);
      return { width, height, values, valid: validity(values, common, missing, type) };
    });
  } catch (e) {
    if (signal.aborted) throw signal.reason ?? e;
    throw asHttpError(e, cog.source);
  }
}

/** The samples' planes: through a cached block reader when the level has one that holds them all. */
async function readSamples(cog: Cog, index: number, window: LevelWindow, samples: number[], signal: AbortSignal, work: Reservation): Promise<ArrayLike<number>[]> {
  const level = cog.levels[index];
  const channels = level.blocks?.layout.channels ?? 0;
  if (samples.every((s) => s < channels)) return planesOf(await cog.readLevelWindow(index, window, signal, work), samples);
  if (level.samples) return planesOf(await level.samples.read(window, signal, work), samples, sampleType(level.image));
  const rasters = await heldRead((options) => level.image.readRasters({ window, samples, ...options }), signal, work.share());
  return Array.from({ length: samples.length }, (_, i) => rasters[i] as ArrayLike<number>);
}

/** The level's transparency mask over the window (0 where hidden), through the block cache when it can. */
async function readMask(cog: Cog, index: number, window: LevelWindow, signal: AbortSignal, work: Reservation): Promise<ArrayLike<number> | undefined> {
  const { mask, maskBlocks } = cog.levels[index];
  if (maskBlocks) return maskBytes(await maskBlocks.read(window, signal, work));
  if (mask) return (await heldRead((options) => mask.readRasters({ window, samples: [0], ...options }), signal, work.share()))[0] as ArrayLike<number>;
  return undefined;
}

/** Samples `samples` of a window's pixels (8-bit unless `type` says) as planes, bytes or floats (Plane). */
function planesOf(pixels: BlockView, samples: number[], type?: SampleType): (Float32Array | Uint8Array)[] {
  const bytes = !type || (type.kind === "uint" && type.bits === 8);
  const data = type ? typedSamples(pixels.data, type) : pixels.data;
  const size = pixels.crop.width * pixels.crop.height;
  const planes = samples.map((sample) => deinterleaved(data, sample, pixels, bytes ? new Uint8Array(size) : new Float32Array(size)));
  pixels.release?.(); // copied: a cached block's memory may be reused once evicted
  return planes;
}

/**
 * Sample `sample` of each pixel of the view's crop into `plane`. One sample a pass: a loop over
 * the samples inside the pixel loop kept leaving V8's optimised code (one deopt a tile).
 */
function deinterleaved<T extends Float32Array | Uint8Array>(data: ArrayLike<number>, sample: number, { width: stride, channels, crop }: BlockView, plane: T): T {
  let to = 0;
  for (let y = 0; y < crop.height; y++) {
    let from = ((crop.top + y) * stride + crop.left) * channels + sample;
    for (let x = 0; x < crop.width; x++, from += channels) plane[to++] = data[from];
  }
  return plane;
}

/** The constructors of typed arrays over samples of each kind and size, as a file stores them. */
const TYPED: Record<SampleKind, Record<number, new (buffer: ArrayBufferLike, offset: number, length: number) => ArrayLike<number>>> = {
  uint: { 8: Uint8Array, 16: Uint16Array, 32: Uint32Array },
  int: { 8: Int8Array, 16: Int16Array, 32: Int32Array },
  float: { 32: Float32Array, 64: Float64Array },
};

/** `bytes` viewed as samples of `type`, in place (the block cache aligns its blocks), else copied first. */
function typedSamples(bytes: Uint8Array, { kind, bits }: SampleType): ArrayLike<number> {
  const size = bits / 8;
  const aligned = bytes.byteOffset % size === 0 ? bytes : bytes.slice();
  return new TYPED[kind][bits](aligned.buffer, aligned.byteOffset, aligned.byteLength / size);
}

/** A mask window's bytes as they are (no float plane: they are only tested against 0), copied out of a cached block. */
function maskBytes(view: BlockView): Uint8Array {
  const pixels = view as PixelView; // a mask reader's windows are one 8-bit channel (cog.ts)
  try {
    return (view.release ? copyWindow(pixels) : compactWindow(pixels)).data;
  } finally {
    view.release?.();
  }
}

function and(valid: Uint8Array, plane: ArrayLike<number>): void {
  for (let i = 0; i < valid.length; i++) if (plane[i] === 0) valid[i] = 0;
}

/** A plane's values as Plane keeps them: bytes and floats as they are, other samples as floats. */
function planeValues(plane: ArrayLike<number>): Float32Array | Uint8Array {
  return plane instanceof Float32Array || plane instanceof Uint8Array ? plane : Float32Array.from(plane);
}

/**
 * 1 where `common` allows, the value is not NaN and not `nodata` (compared as the samples are
 * stored). Integer samples without a nodata they can hold share `common` itself: no test to make.
 */
function validity(values: ArrayLike<number>, common: Uint8Array, nodata: number | undefined, type: SampleType): Uint8Array {
  const missing = nodata === undefined ? undefined : Math.fround(nodata);
  const nanMissing = nodata !== undefined && Number.isNaN(nodata);
  // An integer band's nodata that its type cannot hold never matches (GDAL ignores it too).
  const comparable = missing !== undefined && !nanMissing && (type.kind === "float" || Number.isInteger(nodata));
  if (type.kind !== "float" && !comparable) return common;
  const valid = new Uint8Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    valid[i] = common[i] && v === v && !(comparable && v === missing) ? 1 : 0;
  }
  return valid;
}
