// Coordinate reference systems, resolved offline: a source's from its GeoKeys (an EPSG code, or a
// user-defined CRS the keys spell out) through geotiff-geokeys-to-proj4's bundled EPSG tables,
// and each tile matrix set's own; proj4 converts points between them. No network look-up.
import { toProj4, type GeoKeys } from "geotiff-geokeys-to-proj4";
import proj4 from "proj4";
import { tileMatrixSet } from "../../shared/maps/tile-matrix-sets";

export interface Crs {
  /** "EPSG:<code>" as the GeoKeys name it, or the PROJ string of a user-defined CRS. */
  name: string;
  /** The PROJ string proj4 reads. */
  definition: string;
  /** Multiplies the CRS's own x and y into proj4's units (US feet into metres, say). */
  unitScale: [number, number];
}

/** GeoKey value meaning "defined by other keys, not an EPSG code". */
const USER_DEFINED = 32767;
/** geotiff-geokeys-to-proj4's errors after which its PROJ string does not describe the file. */
const FATAL = [
  "CRSNotSupported",
  "conversionNotSupported",
  "coordinateTransformationNotSupported",
  "GeogLinearUnitSizeGeoKeyNotDefined",
  "GeogAngularUnitSizeGeoKeyNotDefined",
  "ProjLinearUnitSizeGeoKeyNotDefined",
];

/** The CRS the GeoKeys define, or undefined when they define none proj4 can use. */
export function crsOfGeoKeys(keys: Record<string, unknown> | null | undefined): Crs | undefined {
  if (!keys) return undefined;
  const code = keys.ProjectedCSTypeGeoKey ?? keys.GeographicTypeGeoKey;
  const epsg = typeof code === "number" && Number.isInteger(code) && code > 0 && code !== USER_DEFINED ? code : undefined;
  if (epsg === undefined && keys.ProjectedCSTypeGeoKey === undefined && keys.GeographicTypeGeoKey === undefined) return undefined;
  let converted: ReturnType<typeof toProj4>;
  try {
    converted = toProj4(keys as unknown as GeoKeys);
  } catch {
    return undefined;
  }
  const errors = converted.errors as unknown as Record<string, unknown>;
  if (FATAL.some((e) => errors[e] !== undefined)) return undefined;
  // Linear or angular positions only: EPSG also names speeds and scales as "units".
  if (!["metre", "degree"].includes(converted.coordinatesUnits)) return undefined;
  const definition = repaired(converted.proj4.trim());
  if (!definition || !usable(definition)) return undefined;
  const { x, y } = converted.coordinatesConversionParameters;
  return { name: epsg === undefined ? definition : `EPSG:${epsg}`, definition, unitScale: [x, y] };
}

/** Whether `crs` is tile matrix set `tmsId`'s own. */
export const inSetCrs = (crs: Crs, tmsId: string) => tileMatrixSet(tmsId).crsName === crs.name;

/**
 * Tile matrix set `tmsId`'s CRS, from its document's (resolved by the bundled EPSG tables, as a
 * client's `EPSG:{code}`); an error naming the set when the tables do not hold it (the
 * decoder's start refuses an operator's set whose CRS they do not, operator-sets.ts).
 */
export function setCrs(tmsId: string): Crs {
  let crs = knownSetCrs.get(tmsId);
  if (!crs) {
    const { crsName } = tileMatrixSet(tmsId);
    crs = crsOfName(crsName);
    if (!crs) throw new Error(`tile matrix set ${tmsId}'s CRS ${crsName} is not in the bundled EPSG tables`);
    knownSetCrs.set(tmsId, crs); // a set's id never names another set
  }
  return crs;
}

const knownSetCrs = new Map<string, Crs>();

/** Whether `crs` counts in degrees of longitude and latitude. */
export const isGeographic = (crs: Crs) => /\+proj=longlat\b/.test(crs.definition);

/** Whether two CRSs are one: coordinates in one are the other's, without conversion. */
export const sameCrs = (a: Crs, b: Crs) => a.name === b.name;

/** Conversion between two CRSs, in proj4's units; none at all between a CRS and itself. */
export const crsConversion = (from: Crs, to: Crs): Conversion => (sameCrs(from, to) ? conversion(to.definition, to.definition) : conversion(from.definition, to.definition));

/** The largest EPSG code: the registry's codes are below it. */
const MAX_EPSG = 999_999;

/**
 * The CRS a client names as `EPSG:{code}` (any case), from the bundled EPSG tables, no network;
 * undefined for another spelling, or a code the tables do not hold as a CRS of positions.
 */
export function crsOfName(name: string): Crs | undefined {
  const match = /^epsg:(\d{1,6})$/i.exec(name);
  const code = match ? Number(match[1]) : 0;
  if (!(code > 0 && code <= MAX_EPSG)) return undefined;
  const crs = crsOfGeoKeys({ ProjectedCSTypeGeoKey: code }) ?? crsOfGeoKeys({ GeographicTypeGeoKey: code });
  // Earth-centred x, y, z has no plane to lay a map on.
  return crs && !/\+proj=geocent\b/.test(crs.definition) ? crs : undefined;
}

/** Conversion from `crs` to the CRS of tile matrix set `tmsId`, or back with `inverse`. */
export function setConversion(crs: Crs, tmsId: string, inverse = false): Conversion {
  const set = setCrs(tmsId);
  return inverse ? crsConversion(set, crs) : crsConversion(crs, set);
}

/** Longitude, latitude on WGS 84. */
export const LON_LAT = proj4.defs("EPSG:4326")!.projStr!;

export type Conversion = (x: number, y: number) => [number, number];

const conversions = new Map<string, Conversion>();

/**
 * Point conversion from one definition to another; non-finite coordinates where the point has
 * no image (a pole in Web Mercator). Cached: building one parses both definitions.
 */
export function conversion(from: string, to: string): Conversion {
  const key = `${from}\n${to}`;
  let convert = conversions.get(key);
  if (!convert) {
    if (from === to) {
      convert = (x, y) => [x, y];
    } else {
      const converter = proj4(from, to);
      convert = (x, y) => {
        try {
          return converter.forward([x, y]) as [number, number];
        } catch {
          return [Number.NaN, Number.NaN];
        }
      };
    }
    // A few source CRSs per catalog, each to every tile matrix set's and back; never unbounded.
    if (conversions.size >= 2048) conversions.clear();
    conversions.set(key, convert);
  }
  return convert;
}

/**
 * Two methods the bundled tables spell so that proj4 misreads them, spelt as EPSG defines them:
 * a polar stereographic CRS (variant B: EPSG:3031, 3976, 3995) without its latitude of origin,
 * which proj4 then takes as the equator, gets the pole on its standard parallel's side; a
 * Mercator (variant B: EPSG:3994, 3388, 5641) whose standard parallel is given as lat_1, which
 * proj4's merc ignores, gets it as lat_ts.
 */
function repaired(definition: string): string {
  const parallel = (key: string) => new RegExp(`\\+${key}=(-?[\\d.]+)`).exec(definition)?.[1];
  if (/\+proj=stere\b/.test(definition) && !/\+lat_0=/.test(definition) && parallel("lat_ts") !== undefined) {
    return `${definition} +lat_0=${Number(parallel("lat_ts")) < 0 ? -90 : 90}`;
  }
  const first = parallel("lat_1");
  if (/\+proj=merc\b/.test(definition) && first !== undefined && parallel("lat_ts") === undefined) {
    return definition.replace(/ \+lat_ts=\S*/, "").replace(/\+lat_1=\S+/, `+lat_ts=${first}`);
  }
  return definition;
}

function usable(definition: string): boolean {
  try {
    proj4(definition, LON_LAT);
    return true;
  } catch {
    return false;
  }
}
