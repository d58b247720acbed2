// How a map tile is styled: which bands or expressions it renders, how mosaic assets are reduced
// to one tile, and how values become colours. The same fields come from a tile's query
// (`?expression=…&colormap_name=viridis`) or from a stored Raster Style document (JSON with the
// same names), so both are checked by the same per-field schemas (valibot: small, tree-shaken,
// fit for the Worker bundle) and the same cross-field rules, and every refusal is a 400 naming
// the field and its path.
import * as v from "valibot";
import { badRequest, HttpError } from "../errors";
import { ALGORITHMS, ALGORITHM_NAMES, checkAlgorithmParams, type AlgorithmName, type AlgorithmParams } from "./algorithms";
import { formatExpressions, parseExpressions } from "./expression";
import type { TileRequest } from "./tile-request";

export type Resampling = "nearest" | "bilinear" | "cubic";
export const RESAMPLINGS: readonly Resampling[] = ["nearest", "bilinear", "cubic"];
export const DEFAULT_RESAMPLING: Resampling = "nearest";
/** Band indexes a request may name (a GeoTIFF may hold more; the decoder checks the real count). */
export const MAX_BAND_INDEX = 65535;

export type PixelSelection = "first" | "highest" | "lowest" | "mean" | "median" | "stdev" | "count" | "lastbandhigh" | "lastbandlow";
export const PIXEL_SELECTIONS: readonly PixelSelection[] = ["first", "highest", "lowest", "mean", "median", "stdev", "count", "lastbandhigh", "lastbandlow"];
export const DEFAULT_PIXEL_SELECTION: PixelSelection = "first";

/** Whether mosaic assets are reduced on their source bands or on their evaluated channels. */
export type Stage = "before_channels" | "after_channels";
export const STAGES: readonly Stage[] = ["before_channels", "after_channels"];
/** As rio-tiler's mosaic readers: each asset's expressions are evaluated, then the assets reduced. */
export const DEFAULT_STAGE: Stage = "after_channels";

/**
 * Named colour ramps: rio-tiler's (matplotlib's) names, lower-case, that d3-scale-chromatic
 * draws the same way. The decoder samples each to 256 colours; the edge needs only the names.
 */
export const COLORMAP_NAMES = [
  "viridis", "magma", "inferno", "plasma", "cividis", "turbo",
  "greys", "blues", "greens", "reds", "oranges", "purples",
  "bugn", "bupu", "gnbu", "orrd", "pubu", "pubugn", "purd", "rdpu", "ylgn", "ylgnbu", "ylorbr", "ylorrd",
  "brbg", "prgn", "piyg", "puor", "rdbu", "rdgy", "rdylbu", "rdylgn", "spectral",
] as const;
export type ColormapName = (typeof COLORMAP_NAMES)[number];

/** Red, green, blue, alpha, each 0–255. */
export type Rgba = [number, number, number, number];
/**
 * An explicit map (a colour per whole value; values not listed are transparent) or intervals (a
 * colour for values in [min, max); where intervals overlap the later one wins, as in rio-tiler).
 */
export type Colormap = { kind: "explicit"; entries: [number, Rgba][] } | { kind: "intervals"; entries: [[number, number], Rgba][] };

export const MAX_COLORMAP_ENTRIES = 256;
export const MAX_STYLE_DOCUMENT_LENGTH = 64 * 1024;
const MAX_ASSETS = 256;
const MAX_GAMMA = 10;

/** The fields a style sets, each absent when not given (the default applies). */
export interface StyleFields {
  /** One-based bands to render: one (grey) or three (RGB). Absent: the source's own colour bands. */
  bidx?: number[];
  /** [min, max] mapped linearly to 0–255, one pair per output channel, or one pair for all. */
  rescale?: [number, number][];
  /** Overrides the source's nodata value (NaN allowed). */
  nodata?: number;
  resampling?: Resampling;
  /** Band expressions, in canonical text (`formatExpressions`); the decoder parses them against the source's band names. */
  expression?: string;
  /** STAC asset keys, in the order given. */
  assets?: string[];
  /** Bands to read from an asset, by asset key, in the order of `assets`. */
  assetBidx?: [string, number[]][];
  pixelSelection?: PixelSelection;
  stage?: Stage;
  /** One-based component `highest` and `lowest` compare. */
  rankChannel?: number;
  colormapName?: ColormapName;
  colormap?: Colormap;
  /** Brightness curve on the rescaled 0–1 value: out = v^(1/gamma). */
  gamma?: number;
  /** Multiplies every pixel's alpha (png and webp). */
  opacity?: number;
  /** Applied to the channels before any colouring (algorithms.ts). */
  algorithm?: AlgorithmName;
  /** The algorithm's parameters, as given (checked against it by checkStyleRules). */
  algorithmParams?: AlgorithmParams;
}

// ---- One schema per field: the query's values (converted from text) and a document's both pass through these.

const bandNumber = v.pipe(
  v.number("must be a band number"),
  v.integer("must be a whole band number"),
  v.minValue(1, "must be a band number from 1"),
  v.maxValue(MAX_BAND_INDEX, `must be a band number up to ${MAX_BAND_INDEX}`),
);
const bandList = v.pipe(v.array(bandNumber, "must be a list of band numbers"), v.nonEmpty("names no band"));
const finiteNumber = v.pipe(v.number("must be a number"), v.finite("must be a finite number"));
const RESERVED_KEYS = ["__proto__", "constructor", "prototype"];
const ASSET_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
const assetKey = v.pipe(
  v.string("must be an asset key"),
  v.regex(ASSET_KEY, "must be an asset key of 1 to 64 letters, digits, _ . or -"),
  v.check((key) => !RESERVED_KEYS.includes(key), "is a reserved name, not an asset key"),
);
const colour = v.pipe(
  v.array(v.pipe(v.number("must be a number"), v.integer("must be a whole number"), v.minValue(0, "must be 0–255"), v.maxValue(255, "must be 0–255")), "must be a colour [r, g, b] or [r, g, b, a]"),
  v.check((c) => c.length === 3 || c.length === 4, "must be a colour of 3 or 4 components"),
  v.transform((c): Rgba => [c[0], c[1], c[2], c[3] ?? 255]),
);
const isJsonObject = (input: unknown): input is Record<string, unknown> => typeof input === "object" && input !== null && !Array.isArray(input);
/**
 * A JSON object whose own keys all match `pattern`, checked on the raw input: valibot's record
 * silently skips `__proto__`, `constructor` and `prototype`, and a skipped key must be refused.
 */
const objectWithKeys = (pattern: RegExp, what: string, message: string) =>
  v.pipe(
    v.custom<Record<string, unknown>>(isJsonObject, message),
    v.check((o) => Object.keys(o).every((key) => pattern.test(key) && !RESERVED_KEYS.includes(key)), `has a key that is not ${what}`),
  );
const explicitColormap = v.pipe(
  objectWithKeys(/^(0|-?[1-9]\d{0,8})$/, "a whole number", "must be an object"),
  v.record(v.string(), colour),
  v.transform((o): Colormap => ({ kind: "explicit", entries: Object.entries(o).map(([key, c]): [number, Rgba] => [Number(key), c]).sort((a, b) => a[0] - b[0]) })),
);
const interval = v.pipe(
  v.strictTuple([finiteNumber, finiteNumber], "must be an interval [min, max]"),
  v.check(([min, max]) => min < max, "must be [min, max] with min < max"),
);
const intervalColormap = v.pipe(
  v.array(v.strictTuple([interval, colour], "must be [[min, max], [r, g, b, a]]")),
  v.transform((entries): Colormap => ({ kind: "intervals", entries })),
);

const FIELD_SCHEMAS = {
  bidx: bandList,
  rescale: v.pipe(
    v.array(v.strictTuple([finiteNumber, finiteNumber], "must be min,max"), "must be a list of [min, max]"),
    v.nonEmpty("gives no range"),
    v.check((pairs) => pairs.every(([min, max]) => min < max), "must be min,max with min < max"),
  ),
  nodata: v.pipe(
    v.union([finiteNumber, v.literal("nan")], 'must be a number or "nan"'),
    v.transform((n) => (n === "nan" ? Number.NaN : n)),
  ),
  resampling: v.picklist(RESAMPLINGS, `must be one of ${RESAMPLINGS.join(", ")}`),
  expression: v.pipe(
    v.string("must be a string"),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      try {
        return formatExpressions(parseExpressions(dataset.value, "any"));
      } catch (e) {
        // The parser's message already starts "expression: ": keep what follows.
        addIssue({ message: (e as Error).message.replace(/^expression: /, "") });
        return NEVER;
      }
    }),
  ),
  assets: v.pipe(
    v.array(assetKey, "must be a list of asset keys"),
    v.nonEmpty("names no asset"),
    v.maxLength(MAX_ASSETS, `names more than ${MAX_ASSETS} assets`),
    v.check((keys) => new Set(keys).size === keys.length, "names an asset twice"),
  ),
  assetBidx: v.pipe(
    objectWithKeys(ASSET_KEY, "an asset key", "must be an object of asset keys to band lists"),
    v.record(assetKey, bandList),
    v.transform((o) => Object.entries(o)),
  ),
  pixelSelection: v.picklist(PIXEL_SELECTIONS, `must be one of ${PIXEL_SELECTIONS.join(", ")}`),
  stage: v.picklist(STAGES, `must be one of ${STAGES.join(", ")}`),
  rankChannel: v.pipe(v.number("must be a number"), v.integer("must be a whole number"), v.minValue(1, "must be a whole number from 1")),
  colormapName: v.picklist(COLORMAP_NAMES, `must be one of ${COLORMAP_NAMES.join(", ")}`),
  colormap: v.pipe(
    v.lazy((input) => (Array.isArray(input) ? intervalColormap : explicitColormap)),
    v.check((c) => c.entries.length >= 1 && c.entries.length <= MAX_COLORMAP_ENTRIES, `must have 1 to ${MAX_COLORMAP_ENTRIES} entries`),
  ),
  gamma: v.pipe(finiteNumber, v.gtValue(0, "must be greater than 0"), v.maxValue(MAX_GAMMA, `must be at most ${MAX_GAMMA}`)),
  opacity: v.pipe(finiteNumber, v.minValue(0, "must be 0–1"), v.maxValue(1, "must be 0–1")),
  algorithm: v.picklist(ALGORITHM_NAMES, `must be one of ${ALGORITHM_NAMES.join(", ")}`),
  algorithmParams: v.pipe(
    objectWithKeys(/^[a-z_]{1,32}$/, "a parameter name", "must be a JSON object of parameters"),
    v.record(v.string(), v.union([finiteNumber, v.pipe(v.string(), v.maxLength(32, "is too long"))], "must be a number or a word")),
  ),
} satisfies { [K in keyof StyleFields]-?: v.GenericSchema<unknown, StyleFields[K]> };

/** How each field is named in a query and a document (titiler's names). */
export const FIELD_NAMES: Record<keyof StyleFields, string> = {
  bidx: "bidx",
  rescale: "rescale",
  nodata: "nodata",
  resampling: "resampling",
  expression: "expression",
  assets: "assets",
  assetBidx: "asset_bidx",
  pixelSelection: "pixel_selection",
  stage: "stage",
  rankChannel: "rank_channel",
  colormapName: "colormap_name",
  colormap: "colormap",
  gamma: "gamma",
  opacity: "opacity",
  algorithm: "algorithm",
  algorithmParams: "algorithm_params",
};

/** Checks one field's value (a query's, converted from text), throwing 400 `{name}{path} {problem}`. */
export function checkField<K extends keyof StyleFields>(key: K, value: unknown): NonNullable<StyleFields[K]> {
  const result = v.safeParse(FIELD_SCHEMAS[key] as unknown as v.GenericSchema<unknown, StyleFields[K]>, value);
  if (!result.success) throw refusal(FIELD_NAMES[key], result.issues[0]);
  return result.output as NonNullable<StyleFields[K]>;
}

/** A list of band numbers with no rule on its length (a point answers any number of bands); 400 otherwise. */
export function checkBandList(value: unknown): number[] {
  const result = v.safeParse(bandList, value);
  if (!result.success) throw refusal(FIELD_NAMES.bidx, result.issues[0]);
  return result.output;
}

function refusal(subject: string, issue: v.BaseIssue<unknown>): Error {
  return badRequest(`${subject}${issuePath(issue)} ${issue.message}`);
}

/** `[0][1]` or `["visual"][2]`: where inside a field the issue lies. */
function issuePath(issue: v.BaseIssue<unknown>): string {
  return (issue.path ?? []).map((item) => (typeof item.key === "number" ? `[${item.key}]` : `[${JSON.stringify(item.key)}]`)).join("");
}

// ---- The Raster Style document.

const DOCUMENT_ENTRIES = Object.fromEntries(
  (Object.keys(FIELD_NAMES) as (keyof StyleFields)[]).map((key) => [FIELD_NAMES[key], v.optional(FIELD_SCHEMAS[key])]),
);
const documentSchema = v.strictObject({
  ...DOCUMENT_ENTRIES,
  name: v.optional(v.string("must be a string")),
  description: v.optional(v.string("must be a string")),
  calibration: v.optional(v.literal("none", "other than none is not supported")),
});

/** Parses a stored style document `name`: bounded, every field checked, unknown keys refused. */
export function parseStyleDocument(text: string, name: string): StyleFields {
  const subject = `style "${name}":`;
  if (text.length > MAX_STYLE_DOCUMENT_LENGTH) {
    throw badRequest(`${subject} the document is ${text.length} characters, more than ${MAX_STYLE_DOCUMENT_LENGTH}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw badRequest(`${subject} the document is not JSON`);
  }
  // valibot's objects accept arrays (as JavaScript objects), whose indexes would read as unknown fields.
  if (!isJsonObject(json)) throw badRequest(`${subject} the document must be a JSON object`);
  const result = v.safeParse(documentSchema, json);
  if (!result.success) throw documentRefusal(subject, result.issues[0]);
  const fields: StyleFields = {};
  for (const key of Object.keys(FIELD_NAMES) as (keyof StyleFields)[]) {
    const value = (result.output as Record<string, unknown>)[FIELD_NAMES[key]];
    if (value !== undefined) (fields as Record<string, unknown>)[key] = value;
  }
  try {
    checkStyleRules(fields);
  } catch (e) {
    throw e instanceof HttpError ? badRequest(`${subject} ${e.message}`) : e;
  }
  return fields;
}

function documentRefusal(subject: string, issue: v.BaseIssue<unknown>): Error {
  const [first, ...rest] = issue.path ?? [];
  if (!first) return badRequest(`${subject} ${issue.message}`);
  if (issue.type === "strict_object" && rest.length === 0) return badRequest(`${subject} unknown field ${JSON.stringify(first.key)}`);
  return refusal(`${subject} ${String(first.key)}`, { ...issue, path: rest as typeof issue.path });
}

/**
 * The document's fields, overridden by the ones the query gave (`styleQuery`); `styleName`
 * removed, so the request is canonical. Checked by the same rules as a query's request.
 */
export function withStyleDocument(req: TileRequest, doc: StyleFields): TileRequest {
  const { styleName: _name, styleQuery, ...rest } = req;
  const merged: TileRequest = { ...rest, ...doc, ...styleQuery };
  merged.resampling = merged.resampling ?? DEFAULT_RESAMPLING;
  checkStyleRules(merged);
  return merged;
}

// ---- Rules across fields: the same for a query, a document and their merge.

type RuleSubject = StyleFields & { format?: string };

/** What the fields say together; 400 naming the fields that conflict. */
export function checkStyleRules(req: RuleSubject): void {
  checkSelectionRules(req);
  if (req.algorithm) checkAlgorithmRules(req.algorithm, req);
  else if (req.algorithmParams) throw badRequest("algorithm_params needs an algorithm");
  // An algorithm reads its own number of bands (checked below); a picture takes grey or RGB.
  if (req.bidx && !req.algorithm && req.bidx.length !== 1 && req.bidx.length !== 3) throw badRequest(`bidx names ${req.bidx.length} bands; a tile has 1 (grey) or 3 (RGB)`);
  if (req.colormap && req.colormapName) throw badRequest("colormap and colormap_name cannot be given together");
  if (req.opacity !== undefined && req.format === "jpg") throw badRequest("opacity: jpg has no alpha; ask for png or webp");
  if (req.gamma !== undefined && req.colormap && !req.rescale) {
    throw badRequest("gamma applies to rescaled values, and a colormap without rescale colours the raw values: give rescale");
  }
  const made = renderedChannels(req);
  if (made !== undefined && req.algorithm && made !== ALGORITHMS[req.algorithm].inputs) {
    throw badRequest(`${req.algorithm} reads ${ALGORITHMS[req.algorithm].inputs} channel${ALGORITHMS[req.algorithm].inputs === 1 ? "" : "s"}, and the request makes ${made}; choose them with bidx or an expression`);
  }
  const channels = req.algorithm ? ALGORITHMS[req.algorithm].outputs : made;
  if (channels !== undefined) checkChannelCount(channels, req);
  if (req.rescale && req.rescale.length !== 1 && req.rescale.length !== (channels ?? 3)) {
    throw badRequest(`rescale gives ${req.rescale.length} ranges; give one for every band, or one for all ${channels ?? 3}`);
  }
}

/** An algorithm's parameters, and what an exact encoding refuses: a lossy format, or anything that changes its values. */
function checkAlgorithmRules(name: AlgorithmName, req: RuleSubject): void {
  checkAlgorithmParams(name, req.algorithmParams ?? {});
  if (!ALGORITHMS[name].exact) return;
  if (req.format === "jpg") throw badRequest(`${name} encodes heights exactly: jpg is lossy; ask for png or webp`);
  const changing = (["rescale", "colormap", "colormapName", "gamma"] as const).find((key) => req[key] !== undefined);
  if (changing) throw badRequest(`${name} encodes heights exactly: ${FIELD_NAMES[changing]} would change them`);
}

/** The rules on what is read (bands, assets, pixel selection), which a point's values obey too. */
export function checkSelectionRules(req: Pick<StyleFields, "expression" | "bidx" | "pixelSelection" | "rankChannel" | "assetBidx" | "assets">): void {
  if (req.expression !== undefined && req.bidx) throw badRequest("expression and bidx cannot be given together: an expression names its bands");
  checkRankChannel(req.pixelSelection ?? DEFAULT_PIXEL_SELECTION, req.rankChannel);
  if (req.assetBidx) {
    const missing = req.assetBidx.find(([key]) => !req.assets?.includes(key));
    if (missing) throw badRequest(`asset_bidx names asset "${missing[0]}", which is not in assets`);
  }
}

/** rank_channel's rules: only the modes that rank take it, a whole number within the tuple (when its size is known). */
export function checkRankChannel(mode: PixelSelection, rankChannel: number | undefined, components?: number): void {
  if (rankChannel === undefined) return;
  if (mode !== "highest" && mode !== "lowest") throw badRequest(`rank_channel applies to highest and lowest only, not ${mode}`);
  const max = components ?? Number.MAX_SAFE_INTEGER;
  if (!(Number.isInteger(rankChannel) && rankChannel >= 1 && rankChannel <= max)) {
    throw badRequest(`rank_channel must be a whole number from 1${components === undefined ? "" : ` to ${components} (the tuple's components)`}, not ${rankChannel}`);
  }
}

/**
 * How many channels the request renders, when the request alone says so: `count` gives one;
 * an expression its channels, bidx its bands, one fewer after a `lastband*` reduction of channels.
 * Undefined when the source decides (its default bands, or a `lastband*` before channels).
 */
export function renderedChannels(req: StyleFields): number | undefined {
  const mode = req.pixelSelection ?? DEFAULT_PIXEL_SELECTION;
  if (mode === "count") return 1;
  const dropsLast = mode === "lastbandhigh" || mode === "lastbandlow";
  if (dropsLast && req.expression !== undefined && (req.stage ?? DEFAULT_STAGE) === "before_channels") return undefined;
  const made = req.expression !== undefined ? parseExpressions(req.expression, "any").channels.length : req.bidx?.length;
  return made === undefined ? undefined : made - (dropsLast ? 1 : 0);
}

/** A tile renders 1 channel (grey, or colour-mapped) or 3 (RGB); a colour map takes exactly one. */
export function checkChannelCount(channels: number, req: Pick<StyleFields, "colormap" | "colormapName">): void {
  if (channels !== 1 && channels !== 3) {
    throw badRequest(`the request makes ${channels} channel${channels === 1 ? "" : "s"}; a tile renders 1 (grey or a colormap) or 3 (RGB)`);
  }
  if (channels !== 1 && (req.colormap || req.colormapName)) {
    throw badRequest(`a colormap applies to one channel, and the request makes ${channels}`);
  }
}
