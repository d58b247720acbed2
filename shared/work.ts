// Work: the CPU time a request buys, beside the memory it holds (shared/cost.ts), by one formula
// both tiers compute: the edge from the cached SourceInfo before any decode, the decoder from the
// opened source. A unit is about one millisecond of one decoder core; `npm run bench:work`
// measures every coefficient below on the machine it runs on and how close the sums come to
// real renders. Memory bounds the envelope; work bounds the time one URL can buy: a request
// above LARGE_DECODE_THRESHOLD_WORK is a full-partition decode, and one that a core could not
// finish within REQUEST_TIMEOUT is refused before any pixel is read.
//
// Counted in millions of samples (a sample is one channel of one pixel) at each stage: every
// stored block a read decodes, libvips's resampling of the window into the output, a rotation's
// canvas, and the encode of what is sent.

import type { Format } from "./iiif/image-request";
import type { AlgorithmName } from "./maps/algorithms";
import type { PixelSelection, Resampling } from "./maps/style";
import { rotatedCanvas } from "./iiif/resolve";
import { chooseLevel, windowAtLevel } from "./levels";
import { alignedSpan, type DecodeShape } from "./cost";

/** Stored block codecs the decoder reads (SourceInfo.codec); anything else is costed as "other". */
export type Codec = "jpeg" | "webp" | "deflate" | "lzw" | "zstd" | "packbits" | "none" | "other";

/** Units (≈ ms of one core) per million samples, measured by `npm run bench:work` (the map stages by `npm run bench:map-stages`). */
export const WORK_PER_MEGASAMPLE = {
  /** Reading and decoding stored blocks, by codec (a predictor's undoing included). */
  decode: { jpeg: 3.5, webp: 25, deflate: 13, lzw: 21, zstd: 9, packbits: 6, none: 2, other: 25 } satisfies Record<Codec, number>,
  /** libvips's lanczos3 reduce: per million samples of the window read plus the output. */
  reduce: 1,
  /** libvips's lanczos3 enlarge (a `^` size): per million samples of the output. */
  enlarge: 15,
  /** The render's own passes over its output (the window copied out of its blocks, libvips's input, flattening). */
  pipeline: 2.5,
  /** A rotation or mirror, per million samples of the rotated canvas. */
  rotate: 7,
  /** Encoding the answer, by format (pdf is a JPEG inside a page; tif is LZW; jp2 is OpenJPEG). */
  encode: { jpg: 2, png: 22, webp: 55, tif: 15, gif: 770, pdf: 3.5, jp2: 90 } satisfies Record<Format, number>,
  /**
   * A map tile's warp of one band, per million samples of the tile, by kernel at scale 1 (the
   * transformer's share included; `bench:map-stages`). A kernel widens with the source pixels an
   * output pixel covers: readWork scales bilinear and cubic by that spread.
   */
  warp: { nearest: 22, bilinear: 52, cubic: 74 } satisfies Record<Resampling, number>,
  /** A band expression per million samples of the tile, per asset: each node, and each evaluation's loads and stores. */
  expression: { node: 1.5, evaluation: 47 },
  /** Pixel selection, per million samples of the tile per component, per asset, by mode. */
  pixelSelection: { first: 4.5, highest: 5, lowest: 5, mean: 6, median: 48, stdev: 23, count: 3.5, lastbandhigh: 5.5, lastbandlow: 6.5 } satisfies Record<PixelSelection, number>,
  /** Rescaling and colouring the reduced tile, per million pixels (three channels rescaled, or a colour map). */
  colorize: 25,
  /** An algorithm over the tile, per million pixels of its output. */
  algorithm: { hillshade: 35, slope: 65, terrarium: 15, terrainrgb: 15, normalizedIndex: 20 } satisfies Record<AlgorithmName, number>,
};

/** Work every decode takes whatever its size: the request's parse and signature, the cached snapshot, the answer. */
export const WORK_PER_REQUEST = 2;

/** Samples → work at `perMegasample` units per million. */
export const megasamples = (samples: number, perMegasample: number) => (samples / 1e6) * perMegasample;

/**
 * The work of an IIIF render: the blocks of the level it reads (whole blocks, every sample they
 * store, as the decoder decodes them), the resampling when the output is not the window's size, the rotation's canvas,
 * and the encode.
 */
export function imageWork(s: DecodeShape & { codec?: Codec; mirror?: boolean }): number {
  const levelIndex = chooseLevel(s.levels, s.region, s.width, s.height);
  const level = s.levels[levelIndex];
  const [x0, y0, x1, y1] = windowAtLevel(s.levels[0], level, s.region);
  const blocks = alignedSpan(x0, x1, s.tileWidth, level.width) * alignedSpan(y0, y1, s.tileHeight, level.height);
  const out = s.width * s.height;
  const windowPixels = (x1 - x0) * (y1 - y0);
  const same = windowPixels === out && x1 - x0 === s.width;
  const resample = same ? 0 : out > windowPixels ? megasamples(out * s.channels, WORK_PER_MEGASAMPLE.enlarge) : megasamples((windowPixels + out) * s.channels, WORK_PER_MEGASAMPLE.reduce);
  const canvas = rotatedCanvas(s.width, s.height, s.degrees);
  const rotated = s.degrees === 0 && !s.mirror ? 0 : canvas.width * canvas.height;
  const encoded = rotated || out;
  const c = s.channels;
  return (
    WORK_PER_REQUEST +
    megasamples(blocks * (s.blockSamples ?? c), WORK_PER_MEGASAMPLE.decode[s.codec ?? "other"]) +
    resample +
    megasamples(out * c, WORK_PER_MEGASAMPLE.pipeline) +
    megasamples(rotated * c, WORK_PER_MEGASAMPLE.rotate) +
    megasamples(encoded * c, WORK_PER_MEGASAMPLE.encode[s.format ?? "jpg"])
  );
}
