// What `tessera validate` checks, with the decoder's own code: its local-file Source, tiff-guard
// and geotiff.js's parse (parseTiff), its sample, predictor and codec checks, then Cog.open and
// one decoded block, so a valid file is one the decoder serves. Every problem found is listed,
// each with the command that fixes it. Samples other than 8-bit are served as map tiles only:
// a problem for a file that is not georeferenced (nothing would serve it), else a valid file
// whose report says IIIF images of it are refused.

import path from "node:path";
import { getDecoder, type GeoTIFFImage } from "geotiff";
import { HttpError } from "../shared/errors";
import { blockParameters, COMPRESSION } from "../regional/cog/codecs";
import { Cog, MAX_TILE_SIDE, parseTiff, unsupportedSamples, type CogLevel, type ParsedTiff } from "../regional/cog/cog";
import { readBands } from "../regional/cog/bands";
import { readGeoreference } from "../regional/cog/georeference";
import { openLocalFile } from "../regional/source/local";
import type { Source } from "../regional/source/source";
import { failureText } from "./refusal";

export interface Problem {
  /** Stable name of the problem, for scripts. */
  code: string;
  message: string;
  /** What to do about it, with the command line when one fixes it. */
  fix: string;
}

export interface CogInfo {
  width: number;
  height: number;
  levels: number;
  tileWidth: number;
  tileHeight: number;
  compression: string;
  bands: number;
}

export interface Report {
  file: string;
  valid: boolean;
  problems: Problem[];
  /** What a valid file is served as: IIIF images (8-bit samples), map tiles (georeferenced). */
  serves: { images: boolean; tiles: boolean };
  /** Null when the file could not be parsed as a TIFF. */
  info: CogInfo | null;
}

/** A problem before its fix is written: `action` says what to do, the file's gdal_translate line follows. */
interface Finding {
  code: string;
  message: string;
  action: string;
}

/** The block size the fix lines ask for, and the side an image without tiles may have without overviews. */
const BLOCK_SIZE = 512;
/** TIFF tiles are multiples of 16 pixels on each side. */
const TILE_MULTIPLE = 16;

/** Checks `file`; a bad or missing file is a report with its problems, not an exception. */
export async function checkCog(file: string): Promise<Report> {
  const source = await openLocalFile(file, path.basename(file));
  if (!source) {
    return { file, valid: false, problems: [{ code: "not_found", message: `${file}: no such file`, fix: "check the path" }], serves: NOTHING, info: null };
  }
  try {
    return await checkSource(file, source);
  } finally {
    await source.close();
  }
}

async function checkSource(file: string, source: Source): Promise<Report> {
  let parsed: ParsedTiff;
  try {
    parsed = await parseTiff(source, { prefetchRing: 0 });
  } catch (e) {
    const problem = (await startsLikeTiff(source)) ? { code: codeOf(e), message: failureText(e) } : { code: "not_tiff", message: `${file} is not a TIFF file` };
    return { file, valid: false, problems: [{ ...problem, fix: `convert it from the original with GDAL: ${translateLine(file)}` }], serves: NOTHING, info: null };
  }
  const pyramid = pyramidProblems(parsed.levels);
  // Map tiles serve a georeferenced file, across the antimeridian and around the poles too.
  const tiles = readGeoreference(parsed.levels[0].image, parsed.levels) !== undefined;
  const images = parsed.levels.every((level) => unsupportedSamples(level.image).every((p) => !EIGHT_BIT.has(p.property)));
  const levelFound = (await Promise.all(parsed.levels.map(levelProblems))).flat();
  // Map tiles read any sample type: for a georeferenced file, IIIF's 8-bit limit is no problem.
  const found = [...levelFound.filter((f) => !tiles || !EIGHT_BIT.has(f.code)), ...pyramid, ...(await layoutProblems(parsed))];
  // GDAL keeps the overviews a file has unless told otherwise: wrong ones must be rebuilt.
  const line = translateLine(file, parsed.levels[0].image, parsed.levels.length > 1 && pyramid.length > 0);
  // Only a file with nothing else wrong is asked of the decoder itself: it catches what the checks above do not.
  if (found.length === 0) found.push(...(await decoderRefusal(source)));
  // The same problem in every level is one problem.
  const unique = new Map(found.map(({ code, message, action }) => [message, { code, message, fix: `${action}: ${line}` }]));
  const problems = [...unique.values()];
  const valid = problems.length === 0;
  return { file, valid, problems, serves: valid ? { images, tiles } : NOTHING, info: infoOf(parsed.levels) };
}

/** Properties only the 8-bit IIIF pipeline needs. */
const EIGHT_BIT = new Set(["bit_depth", "sample_format"]);
const NOTHING = { images: false, tiles: false };

/** Problems of one level's storage: tiling, samples, predictor and codec. */
async function levelProblems(level: CogLevel): Promise<Finding[]> {
  const dir = level.image.getFileDirectory();
  const found: Finding[] = [];
  if (!dir.hasTag("TileWidth")) {
    found.push({ code: "strips", message: "stored in strips, not tiles: every request reads whole rows of the image", action: "rewrite it as a tiled COG" });
  } else if (level.tileWidth % TILE_MULTIPLE || level.tileHeight % TILE_MULTIPLE || Math.max(level.tileWidth, level.tileHeight) > MAX_TILE_SIDE) {
    found.push({
      code: "tile_size",
      message: `${level.tileWidth}x${level.tileHeight} tiles: tile sides must be multiples of ${TILE_MULTIPLE} up to ${MAX_TILE_SIDE}`,
      action: `rewrite it with ${BLOCK_SIZE}-pixel tiles`,
    });
  }
  for (const { property, error } of unsupportedSamples(level.image)) {
    found.push({ code: property, message: error.message, action: "rewrite it as 8-bit unsigned samples" });
  }
  let params;
  try {
    params = await blockParameters(dir);
  } catch (e) {
    return [...found, { code: "predictor", message: failureText(e), action: "rewrite it without that predictor" }];
  }
  try {
    await getDecoder(compressionOf(level.image), params as never);
  } catch (e) {
    found.push({ code: "compression", message: failureText(e), action: "rewrite it with a compression the decoder reads" });
  }
  return found;
}

/** Problems of the pyramid: missing, incomplete or not halving overviews. */
function pyramidProblems(levels: CogLevel[]): Finding[] {
  const smallest = levels[levels.length - 1];
  const found: Finding[] = [];
  if (!fitsOneBlock(smallest)) {
    const size = `${smallest.width}x${smallest.height}`;
    found.push(
      levels.length === 1
        ? { code: "no_overviews", message: `no overviews: every zoomed-out view of the ${size} image decodes all of it`, action: "add overviews" }
        : { code: "overviews_incomplete", message: `the smallest overview, ${size}, is larger than one tile: zoomed-out views decode all of it`, action: "add overviews down to one tile" },
    );
  }
  for (let i = 1; i < levels.length; i++) {
    const [above, level] = [levels[i - 1], levels[i]];
    if (!halves(above.width, level.width) || !halves(above.height, level.height)) {
      found.push({
        code: "overviews_not_halving",
        message: `overview ${level.width}x${level.height} is not half of the level above it (${above.width}x${above.height}): levels are picked by halving`,
        action: "rebuild the overviews",
      });
    }
  }
  return found;
}

/**
 * A cloud-optimized file has every IFD before the image data: a remote reader gets all the
 * headers in its first reads instead of seeking through the file for each level.
 */
async function layoutProblems({ tiff, images }: ParsedTiff): Promise<Finding[]> {
  const ifds = [tiff.firstIFDOffset, ...images.map((image) => image.getFileDirectory().nextIFDByteOffset)].filter((o) => o > 0);
  const dataStarts = await Promise.all(images.map(firstDataOffset));
  if (Math.max(...ifds) < Math.min(...dataStarts)) return [];
  return [{ code: "not_cloud_optimized", message: "the IFDs are not all before the image data, as a COG has them", action: "rewrite it as a COG" }];
}

/** Where an image's first stored block starts (Infinity when it stores none). */
async function firstDataOffset(image: GeoTIFFImage): Promise<number> {
  const dir = image.getFileDirectory();
  const offsets = (await dir.loadValue(dir.hasTag("TileWidth") ? "TileOffsets" : "StripOffsets")) as ArrayLike<number | bigint> | undefined;
  let first = Infinity;
  // A sparse file stores no block at offset 0 for an empty tile.
  for (const offset of Array.from(offsets ?? [], Number)) if (offset > 0 && offset < first) first = offset;
  return first;
}

/** What the decoder answers when asked for the file: opening it, then one block of the smallest level. */
async function decoderRefusal(source: Source): Promise<Finding[]> {
  try {
    const cog = await Cog.open(source, { prefetchRing: 0 });
    // A one-pixel window still decodes its whole block: as IIIF reads it, or as map tiles do.
    const smallest = cog.levels.length - 1;
    if (!cog.imageRefusal) await cog.readWindow(smallest, { x: 0, y: 0, w: 1, h: 1 });
    else {
      const work = cog.budget.tryReserve(cog.windowCost(smallest, [0, 0, 1, 1]), `validating ${source.label}`);
      await readBands(cog, smallest, [0, 0, 1, 1], [1], undefined, new AbortController().signal, work).finally(() => work.release());
    }
    return [];
  } catch (e) {
    return [{ code: codeOf(e), message: failureText(e), action: "rewrite it with GDAL" }];
  }
}

function infoOf(levels: CogLevel[]): CogInfo {
  const [full] = levels;
  return {
    width: full.width,
    height: full.height,
    levels: levels.length,
    tileWidth: full.tileWidth,
    tileHeight: full.tileHeight,
    compression: compressionName(compressionOf(full.image)),
    bands: full.image.getSamplesPerPixel(),
  };
}

/**
 * The gdal_translate line that rewrites `file` as a COG the decoder serves: JPEG for 8-bit
 * RGB, lossless DEFLATE otherwise, samples scaled to 8 bits when they are not, new overviews
 * when `rebuildOverviews`.
 */
function translateLine(file: string, image?: GeoTIFFImage, rebuildOverviews = false): string {
  const eightBit = image !== undefined && unsupportedSamples(image).every((p) => p.property !== "bit_depth" && p.property !== "sample_format");
  const compress = eightBit && image.getSamplesPerPixel() === 3 ? "JPEG" : "DEFLATE";
  const toBytes = image !== undefined && !eightBit ? ["-ot", "Byte", "-scale"] : [];
  const out = path.join(path.dirname(file), `${path.basename(file, path.extname(file))}.cog.tif`);
  const args = ["gdal_translate", "-of", "COG", ...toBytes, "-co", `COMPRESS=${compress}`, "-co", `BLOCKSIZE=${BLOCK_SIZE}`, "-co", `OVERVIEWS=${rebuildOverviews ? "IGNORE_EXISTING" : "AUTO"}`, file, out];
  return args.map(shellQuote).join(" ");
}

const shellQuote = (arg: string) => (/^[\w./=:@%+-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`);

/** Whether the file starts with a TIFF or BigTIFF byte-order mark and magic number. */
async function startsLikeTiff(source: Source): Promise<boolean> {
  if (source.size < 4) return false;
  const head = Buffer.from(await source.read(0, 4)).toString("latin1");
  return ["II*\0", "MM\0*", "II+\0", "MM\0+"].includes(head);
}

function fitsOneBlock(level: CogLevel): boolean {
  const tiled = level.image.getFileDirectory().hasTag("TileWidth");
  return level.width <= (tiled ? level.tileWidth : BLOCK_SIZE) && level.height <= (tiled ? level.tileHeight : BLOCK_SIZE);
}

/** Overviews of GDAL and libvips round half sizes up or down. */
const halves = (above: number, size: number) => size === Math.floor(above / 2) || size === Math.ceil(above / 2);

const compressionOf = (image: GeoTIFFImage) => (image.getFileDirectory().getValue("Compression") as number | undefined) ?? COMPRESSION.none;

const compressionName = (code: number) => Object.entries(COMPRESSION).find(([, value]) => value === code)?.[0] ?? `compression ${code}`;

/** The decoder's refusals are 501 (a feature it lacks) or 502 (a file it cannot trust). */
const codeOf = (e: unknown) => (e instanceof HttpError && e.kind === "unsupported" ? "unsupported" : "malformed");
