// Algorithms a map tile applies to its values before colouring (`algorithm=` with
// `algorithm_params=` as JSON, titiler's names): the terrain encodings MapLibre's `raster-dem`
// reads (Terrarium, Mapbox Terrain-RGB), hillshade and slope as `gdaldem` computes them, and a
// normalized difference of two bands. This registry is what the edge lists at /algorithms, what
// a URL is checked against (400 naming the parameter), and what the canonical query writes: only
// the parameters that differ from their defaults, in name order, so two spellings of one tile
// share one cache entry. The kernels themselves run on the decoder.
import { badRequest } from "../errors";

export const ALGORITHM_NAMES = ["hillshade", "slope", "terrarium", "terrainrgb", "normalizedIndex"] as const;
export type AlgorithmName = (typeof ALGORITHM_NAMES)[number];

/** A parameter: a number within bounds, or one of some words. */
type Parameter =
  | { kind: "number"; title: string; default?: number; minimum: number; maximum: number; exclusiveMinimum?: boolean }
  | { kind: "word"; title: string; default: string; values: readonly string[] };

export interface Algorithm {
  title: string;
  description: string;
  /** Channels it reads (the tile's bidx or expression must make exactly these). */
  inputs: number;
  /** Channels it writes, and their type. */
  outputs: number;
  outputType: "uint8" | "float32";
  /** Source pixels read beyond each edge of the tile: a 3×3 kernel needs one, so tiles join without seams. */
  buffer: number;
  /** An exact encoding of values: no rescale, colour map or gamma; only lossless formats. */
  exact: boolean;
  parameters: Record<string, Parameter>;
  /** What the output values span before `rescale` (a rescale replaces it). */
  range(params: AlgorithmParams): [number, number];
}

/** Parameter values by name: numbers or words, as given (defaults are filled by `parametersOf`). */
export type AlgorithmParams = Record<string, number | string>;

/** Horizontal units per vertical unit: 1 on a projected grid; on a geographic one, metres per degree (gdaldem's advice). */
const scale: Parameter = { kind: "number", title: "horizontal units per elevation unit (default: 1 in metres, 111120 in degrees)", minimum: 0, maximum: 1e9, exclusiveMinimum: true };
const zFactor: Parameter = { kind: "number", title: "vertical exaggeration", default: 1, minimum: 0, maximum: 1e6, exclusiveMinimum: true };
const nodataHeight: Parameter = { kind: "number", title: "height written where the DEM has no data", default: 0, minimum: -1e5, maximum: 1e5 };

export const ALGORITHMS: Readonly<Record<AlgorithmName, Algorithm>> = {
  hillshade: {
    title: "Hillshade",
    description: "Shaded relief as gdaldem hillshade computes it (Horn's slope, 1–255; 0 where a neighbour has no data).",
    inputs: 1,
    outputs: 1,
    outputType: "uint8",
    buffer: 1,
    exact: false,
    parameters: {
      azimuth: { kind: "number", title: "direction of the light, degrees clockwise from north", default: 315, minimum: 0, maximum: 360 },
      angle_altitude: { kind: "number", title: "height of the light above the horizon, degrees", default: 45, minimum: 0, maximum: 90 },
      z_factor: zFactor,
      scale,
    },
    range: () => [0, 255],
  },
  slope: {
    title: "Slope",
    description: "Steepness as gdaldem slope computes it (Horn's method), in degrees (0–90) or percent.",
    inputs: 1,
    outputs: 1,
    outputType: "float32",
    buffer: 1,
    exact: false,
    parameters: {
      units: { kind: "word", title: "degrees or percent", default: "degrees", values: ["degrees", "percent"] },
      scale,
    },
    range: (params) => (params.units === "percent" ? [0, 100] : [0, 90]),
  },
  terrarium: {
    title: "Terrarium",
    description: "Elevation encoded for MapLibre's raster-dem (Terrarium): height = R·256 + G + B/256 − 32768, to 1/256 m.",
    inputs: 1,
    outputs: 3,
    outputType: "uint8",
    buffer: 0,
    exact: true,
    parameters: { nodata_height: nodataHeight },
    range: () => [0, 255],
  },
  terrainrgb: {
    title: "Terrain-RGB",
    description: "Elevation encoded as Mapbox Terrain-RGB: height = baseval + (R·65536 + G·256 + B)·interval.",
    inputs: 1,
    outputs: 3,
    outputType: "uint8",
    buffer: 0,
    exact: true,
    parameters: {
      interval: { kind: "number", title: "metres a step", default: 0.1, minimum: 0, maximum: 1e6, exclusiveMinimum: true },
      baseval: { kind: "number", title: "height of code 0", default: -10000, minimum: -1e7, maximum: 1e7 },
      nodata_height: nodataHeight,
    },
    range: () => [0, 255],
  },
  normalizedIndex: {
    title: "Normalized index",
    description: "(b − a) / (b + a) of the tile's two channels a and b (NDVI from red and near infrared), −1 to 1.",
    inputs: 2,
    outputs: 1,
    outputType: "float32",
    buffer: 0,
    exact: false,
    parameters: {},
    range: () => [-1, 1],
  },
};

/** The most parameters a request may give (every algorithm has fewer). */
const MAX_PARAMETERS = 8;

export const isAlgorithmName = (name: string): name is AlgorithmName => (ALGORITHM_NAMES as readonly string[]).includes(name);

/**
 * `algorithm_params` checked against `name`'s parameters: unknown names, wrong kinds and values
 * out of bounds are 400s naming the parameter. Defaults are left out, so the result is canonical.
 */
export function checkAlgorithmParams(name: AlgorithmName, given: AlgorithmParams): AlgorithmParams {
  const { parameters } = ALGORITHMS[name];
  const keys = Object.keys(given);
  if (keys.length > MAX_PARAMETERS) throw badRequest(`algorithm_params gives ${keys.length} parameters; ${name} takes ${Object.keys(parameters).length}`);
  const kept: AlgorithmParams = {};
  for (const key of keys.sort()) {
    const spec = Object.hasOwn(parameters, key) ? parameters[key] : undefined;
    const names = Object.keys(parameters);
    if (!spec) throw badRequest(`algorithm_params: ${name} has no parameter "${key.slice(0, 40)}"; it takes ${names.length ? names.join(", ") : "none"}`);
    const value = given[key];
    checkParameter(key, spec, value);
    if (value !== spec.default) kept[key] = value;
  }
  return kept;
}

function checkParameter(key: string, spec: Parameter, value: number | string): void {
  if (spec.kind === "word") {
    if (typeof value !== "string" || !spec.values.includes(value)) throw badRequest(`algorithm_params.${key} must be one of ${spec.values.join(", ")}`);
    return;
  }
  const inBounds = (n: number) => (spec.exclusiveMinimum ? n > spec.minimum : n >= spec.minimum) && n <= spec.maximum;
  if (typeof value !== "number" || !Number.isFinite(value) || !inBounds(value)) {
    throw badRequest(`algorithm_params.${key} must be a number ${spec.exclusiveMinimum ? "above" : "from"} ${spec.minimum} to ${spec.maximum}`);
  }
}

/** `name`'s parameters with the defaults filled in (a `scale` without default stays absent: the grid decides it). */
export function parametersOf(name: AlgorithmName, given: AlgorithmParams | undefined): AlgorithmParams {
  const filled: AlgorithmParams = {};
  for (const [key, spec] of Object.entries(ALGORITHMS[name].parameters)) if (spec.default !== undefined) filled[key] = spec.default;
  return { ...filled, ...given };
}

/** Source pixels a tile reads beyond each edge for `name`; 0 without an algorithm. */
export const algorithmBuffer = (name: AlgorithmName | undefined) => (name ? ALGORITHMS[name].buffer : 0);

/** Parameters as canonical query text: keys in order, numbers as JavaScript writes them. */
export const algorithmParamsText = (params: AlgorithmParams) => JSON.stringify(Object.fromEntries(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : 1))));

/** The /algorithms document of one algorithm: titiler's shape (inputs, outputs, parameters as JSON Schema). */
export function algorithmDocument(name: AlgorithmName): Record<string, unknown> {
  const a = ALGORITHMS[name];
  const properties = Object.fromEntries(
    Object.entries(a.parameters).map(([key, p]) => [
      key,
      p.kind === "word"
        ? { title: p.title, type: "string", enum: p.values, default: p.default }
        : { title: p.title, type: "number", ...(p.exclusiveMinimum ? { exclusiveMinimum: p.minimum } : { minimum: p.minimum }), maximum: p.maximum, ...(p.default !== undefined && { default: p.default }) },
    ]),
  );
  return {
    id: name,
    title: a.title,
    description: a.description,
    inputs: { nbands: a.inputs },
    outputs: { nbands: a.outputs, dtype: a.outputType, ...(a.exact && { formats: ["png", "webp"] }) },
    parameters: { type: "object", properties, additionalProperties: false },
  };
}
