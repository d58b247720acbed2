// Where a source lies on the Earth, read from its GeoTIFF tags as GDAL reads them: the CRS its
// GeoKeys define (an EPSG code, or a user-defined CRS spelled out in the keys), the affine
// transform from pixels to that CRS (ModelTiepoint + ModelPixelScale, or ModelTransformation;
// shifted half a pixel for PixelIsPoint rasters), and what the map routes derive from them: the
// bounds in longitude/latitude and in each tile matrix set's CRS, and the zooms to tile at. A
// source without them (a scan, the IIIF test pattern), whose CRS cannot be resolved, or whose
// outline has no place on the Earth (a point without longitude and latitude, or past a pole) is
// an image only. A source across longitude ±180° has its bounds unwrapped, east past 180° (and
// past the east edge of a set that goes round the Earth), so its two parts make one box; one
// around a pole reaches the pole, as far as each set does (85.05° on WebMercatorQuad).
// It also places a grid of control points and the outline in longitude and latitude, which the
// edge (no proj4 there) builds the manifest's navPlace and georeference annotation from; not for a
// source across ±180° or around a pole, whose outline a fit in longitude would wrap the wrong way.
import type { GeoTIFFImage } from "geotiff";
import { FOOTPRINT_PER_SIDE, GRID_SIDE, type ControlPoint, type Georeference, type SourceTiling } from "../../shared/protocol";
import type { LevelSize } from "../../shared/levels";
import { TILE_MATRIX_SETS, type TileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { conversion, crsConversion, crsOfGeoKeys, LON_LAT, setConversion, setCrs, type Conversion, type Crs } from "../maps/crs";
import { applyAffine, invertAffine, type Affine } from "../maps/transformer";
import type { Log } from "../runtime/log";

/** A georeferenced source as the warp uses it, and as SourceInfo describes it. */
export interface SourceGeo {
  crs: Crs;
  /** Full-resolution pixel (column, row) → the CRS's coordinates, in proj4's units. */
  pixelToCrs: Affine;
  info: Georeference;
  /**
   * A geographic source across ±180° (170°…190°, say): the longitude its range is centred on.
   * A longitude converted to it is moved by 360° to within 180° of it, so −175° is read at 185°.
   */
  centreLongitude?: number;
  /** The source straddles ±180° (and holds no pole): measured in a CRS that goes round the Earth, it is unwrapped. */
  acrossAntimeridian?: true;
}

type Box = [number, number, number, number];

/** Where a source's outline lies (placeOnEarth). */
export type Place = "on the Earth" | "across the antimeridian" | "around the north pole" | "around the south pole" | "nowhere";

/** GTRasterTypeGeoKey: each pixel's coordinates name its centre, not its corner. */
const PIXEL_IS_POINT = 2;
/** Segments per edge when an outline is transformed (GDAL's transformBounds densifies with 21 points). */
const EDGE_SEGMENTS = 20;

/**
 * Called once per open: a file whose GeoKeys name a CRS but that cannot be placed, or whose
 * control points cannot be, is logged with the reason (a publisher's mistake, or a CRS to add),
 * `label` naming it; a file without GeoKeys is an image, and says nothing.
 */
export function readGeoreference(image: GeoTIFFImage, levels: LevelSize[], label = "", log: Log = () => {}): SourceGeo | undefined {
  const keys = image.getGeoKeys() as Record<string, unknown> | null;
  const crs = crsOfGeoKeys(keys);
  const native = geoTransform(image, keys?.GTRasterTypeGeoKey === PIXEL_IS_POINT);
  const unusable = (reason: string) => log({ level: "warn", msg: "georeference unusable", source: label, reason });
  const namesCrs = keys?.ProjectedCSTypeGeoKey !== undefined || keys?.GeographicTypeGeoKey !== undefined;
  if (!crs || !native) {
    if (namesCrs) unusable(!crs ? "its CRS has no proj4 definition" : "no invertible pixel-to-CRS transform");
    return undefined;
  }
  const [full] = levels;
  const bbox = envelope(corners(full).map(([c, r]) => applyAffine(native, c, r)));
  const [sx, sy] = crs.unitScale;
  const pixelToCrs: Affine = [native[0] * sx, native[1] * sx, native[2] * sx, native[3] * sy, native[4] * sy, native[5] * sy];
  const toLonLat = conversion(crs.definition, LON_LAT);
  const lonLat = perimeter(full).map(([c, r]) => toLonLat(...applyAffine(pixelToCrs, c, r)));
  const place = placeOnEarth(lonLat, pixelDiagonal(pixelToCrs, toLonLat), (latitude) => holdsPole(latitude, crs, pixelToCrs, full));
  if (place === "nowhere") {
    unusable("its outline has no place on the Earth");
    return undefined;
  }
  const tiling: Record<string, SourceTiling> = {};
  const lonLatBounds = lonLatBoundsOf(lonLat, place);
  for (const tms of TILE_MATRIX_SETS.values()) {
    const on = tilingOn(tms, levels, pixelToCrs, crs, place, lonLatBounds);
    if (on) tiling[tms.id] = on;
  }
  const crossing = place !== "on the Earth";
  const info: Georeference = { crs: crs.name, bbox, lonLatBounds, tiling, ...(crossing && { crossesAntimeridian: true }) };
  const placed = controlPoints(full, (c, r) => toLonLat(...applyAffine(pixelToCrs, c, r)));
  if (crossing) unusable(`no control points: it lies ${place}`);
  else if (!placed) unusable("no control points: a point of its grid or outline has no longitude and latitude");
  else Object.assign(info, placed);
  if (place !== "across the antimeridian") return { crs, pixelToCrs, info };
  const centre = GEOGRAPHIC.test(crs.definition) ? applyAffine(pixelToCrs, full.width / 2, full.height / 2)[0] : undefined;
  return { crs, pixelToCrs, info, acrossAntimeridian: true, ...(centre !== undefined && { centreLongitude: centre }) };
}

/** A CRS of longitude and latitude, whose longitudes a source may carry past ±180°. */
const GEOGRAPHIC = /\+proj=longlat\b/;

/**
 * Conversion from `from` to the source's CRS; for a geographic source across ±180°, its
 * longitudes moved by 360° into the source's own range (a tile at −175° reads 185°).
 */
export function toSourceCrs(geo: SourceGeo, from: Crs): Conversion {
  return intoSourceRange(geo, crsConversion(from, geo.crs));
}

/** `convert` (into the source's CRS), its longitudes moved into a geographic source's own range. */
export function intoSourceRange(geo: SourceGeo, convert: Conversion): Conversion {
  const centre = geo.centreLongitude;
  if (centre === undefined) return convert;
  return (x, y) => {
    const [lon, lat] = convert(x, y);
    return [lon - 360 * Math.round((lon - centre) / 360), lat];
  };
}

/** Degrees kept: 1e-8° is about a millimetre, far below any pixel a COG is likely to have. */
const round = (v: number) => Math.round(v * 1e8) / 1e8;

/**
 * The GRID_SIDE² grid evenly over the image (corners and edges included) and the outline,
 * FOOTPRINT_PER_SIDE points a side, in longitude and latitude; undefined when any point has none.
 */
function controlPoints(full: LevelSize, toLonLat: (column: number, row: number) => [number, number]): Pick<Georeference, "controlPoints" | "footprint"> | undefined {
  const { width, height } = full;
  const steps = GRID_SIDE - 1;
  const grid: [number, number][] = [];
  for (let j = 0; j <= steps; j++) for (let i = 0; i <= steps; i++) grid.push([(i * width) / steps, (j * height) / steps]);
  const edge = Array.from({ length: FOOTPRINT_PER_SIDE }, (_, i) => i / FOOTPRINT_PER_SIDE);
  const outline: [number, number][] = [
    ...edge.map((f): [number, number] => [f * width, 0]),
    ...edge.map((f): [number, number] => [width, f * height]),
    ...edge.map((f): [number, number] => [(1 - f) * width, height]),
    ...edge.map((f): [number, number] => [0, (1 - f) * height]),
  ];
  const place = (points: [number, number][]) => points.map(([c, r]) => toLonLat(c, r));
  const [geoGrid, geoOutline] = [place(grid), place(outline)];
  if (![...geoGrid, ...geoOutline].every(([lon, lat]) => Number.isFinite(lon) && Number.isFinite(lat) && Math.abs(lat) <= 90)) return undefined;
  const lonLat = ([lon, lat]: [number, number]): [number, number] => [round(lon), round(lat)];
  return {
    controlPoints: grid.map((resource, i): ControlPoint => ({ resource, geo: lonLat(geoGrid[i]) })),
    footprint: geoOutline.map(lonLat),
  };
}

/**
 * Where the image's outline (its perimeter in longitude and latitude, in order) lies:
 * "nowhere" when a point has no longitude and latitude or lies past a pole; around a pole when
 * the image holds it (`holds`); "across the antimeridian" when the outline goes past longitude
 * ±180° or jumps half the world between neighbours (a projected source that straddles ±180°).
 * `slack`, about a pixel, lets a global raster's edge pixels reach a little past ±180° and ±90°.
 */
function placeOnEarth(lonLat: [number, number][], slack: number, holds: (latitude: 90 | -90) => boolean): Place {
  if (!lonLat.every(([lon, lat]) => Number.isFinite(lon) && Math.abs(lat) <= 90 + slack)) return "nowhere";
  if (holds(90)) return "around the north pole";
  if (holds(-90)) return "around the south pole";
  const past = lonLat.some(([lon]) => Math.abs(lon) > 180 + slack);
  return past || jumps(lonLat, 360) ? "across the antimeridian" : "on the Earth";
}

/** Whether the outline jumps more than half of `period` between neighbours: it wraps round. */
const jumps = (points: [number, number][], period: number) => points.some(([x], i) => Math.abs(x - points[(i + 1) % points.length][0]) > period / 2);

/** Whether the pole at `latitude` lies strictly inside the image (on its edge, a global raster's, it is no cap of its own). */
function holdsPole(latitude: 90 | -90, crs: Crs, pixelToCrs: Affine, full: LevelSize): boolean {
  const [column, row] = applyAffine(invertAffine(pixelToCrs), ...conversion(LON_LAT, crs.definition)(0, latitude));
  const inside = (v: number, size: number) => v > 1e-6 && v < size - 1e-6;
  return inside(column, full.width) && inside(row, full.height);
}

/**
 * The outline's bounds in longitude and latitude: across ±180°, unwrapped (west within
 * −180…180, east past 180); around a pole, every longitude up to the pole.
 */
function lonLatBoundsOf(lonLat: [number, number][], place: Place): Box {
  if (place === "around the north pole") return [-180, Math.min(...lonLat.map((p) => p[1])), 180, 90];
  if (place === "around the south pole") return [-180, -90, 180, Math.max(...lonLat.map((p) => p[1]))];
  return place === "across the antimeridian" ? fromWest(envelope(unwrapped(lonLat, 360)), -180, 360) : envelope(lonLat);
}

/** The points with each x moved by whole `period`s to within half a period of the one before: one continuous outline. */
function unwrapped(points: [number, number][], period: number): [number, number][] {
  const out: [number, number][] = [];
  for (const [x, y] of points) {
    const before = out.length ? out[out.length - 1][0] : x;
    out.push([x - period * Math.round((x - before) / period), y]);
  }
  return out;
}

/**
 * `box` moved by whole `period`s so its west edge lies within [west, west + period); one a whole
 * period wide (a 0–360° grid) is all of it, from `west`.
 */
function fromWest([x0, y0, x1, y1]: Box, west: number, period: number): Box {
  if (x1 - x0 >= period * (1 - 1e-9)) return [west, y0, west + period, y1];
  const shift = period * Math.floor((x0 - west) / period);
  return [x0 - shift, y0, x1 - shift, y1];
}

/** The length in degrees of the first pixel's diagonal (0 when it has no place). */
function pixelDiagonal(pixelToCrs: Affine, toLonLat: (x: number, y: number) => [number, number]): number {
  const [a, b] = [toLonLat(...applyAffine(pixelToCrs, 0, 0)), toLonLat(...applyAffine(pixelToCrs, 1, 1))];
  const diagonal = Math.hypot(b[0] - a[0], b[1] - a[1]);
  return Number.isFinite(diagonal) ? diagonal : 0;
}

/**
 * The pixel → CRS affine in the CRS's own units, or undefined without one. GDAL's order:
 * x = t0 + column·t1 + row·t2, y = t3 + column·t4 + row·t5.
 */
function geoTransform(image: GeoTIFFImage, pixelIsPoint: boolean): Affine | undefined {
  const dir = image.getFileDirectory();
  const m = dir.getValue("ModelTransformation") as ArrayLike<number> | undefined;
  const tie = dir.getValue("ModelTiepoint") as ArrayLike<number> | undefined;
  const scale = dir.getValue("ModelPixelScale") as ArrayLike<number> | undefined;
  let t: Affine;
  if (m && m.length >= 8) t = [m[3], m[0], m[1], m[7], m[4], m[5]];
  else if (tie && tie.length >= 6 && scale && scale.length >= 2) {
    const [i, j, , x, y] = Array.from(tie);
    t = [x - i * scale[0], scale[0], 0, y + j * scale[1], 0, -scale[1]];
  } else return undefined;
  if (pixelIsPoint) {
    // The tie point names the first pixel's centre: its corner is half a pixel up and left.
    t = [t[0] - 0.5 * (t[1] + t[2]), t[1], t[2], t[3] - 0.5 * (t[4] + t[5]), t[4], t[5]];
  }
  const determinant = t[1] * t[5] - t[2] * t[4];
  return t.every(Number.isFinite) && determinant !== 0 ? t : undefined;
}

/**
 * How the source lies on `tms`: its outline there, the resolution gdalwarp would suggest for it
 * in the set's CRS, and the zooms that resolution and the smallest level's call for. Undefined
 * when no part of the outline has coordinates in the set's CRS.
 */
export function tilingOn(tms: TileMatrixSet, levels: LevelSize[], pixelToCrs: Affine, crs: Crs, place: Place, lonLat: Box): SourceTiling | undefined {
  const toSet = setConversion(crs, tms.id);
  const period = periodOf(setCrs(tms.id));
  const placed = placedBy(levels[0], pixelToCrs, toSet, place === "across the antimeridian" && period ? { period, lonLat } : undefined);
  if (!placed) return undefined;
  const bounds = boundsOn(tms, placed.extent, place, period);
  if (!(bounds[0] < bounds[2] && bounds[1] < bounds[3])) return undefined;
  const { resolution } = placed;
  const smallest = levels[levels.length - 1];
  const shrink = Math.max(levels[0].width / smallest.width, levels[0].height / smallest.height);
  const maxZoom = zoomFor(tms, resolution);
  return { bounds, minZoom: Math.min(zoomFor(tms, resolution * shrink), maxZoom), maxZoom, resolution };
}

/**
 * The source's bounds on `tms` from the `extent` of its outline there, within the set's bounding
 * box; on a set that goes round the Earth (`period`, its width), a source across ±180° keeps its
 * extent (from its longitudes: the west edge within the set, the east past it), and one around a
 * pole spans the set's width from its outline's far latitude to the set's edge nearest the pole.
 */
function boundsOn(tms: TileMatrixSet, [x0, y0, x1, y1]: Box, place: Place, period: number): Box {
  const [left, bottom, right, top] = tms.extent;
  if (period && place === "around the north pole") return [left, Math.max(y0, bottom), right, top];
  if (period && place === "around the south pole") return [left, bottom, right, Math.min(y1, top)];
  const across = place === "across the antimeridian" && period > 0;
  return [across ? x0 : Math.max(x0, left), Math.max(y0, bottom), across ? x1 : Math.min(x1, right), Math.min(y1, top)];
}

const periods = new Map<string, number>();

/**
 * How far x goes once round the Earth in `crs`, when its x runs from −period/2 at 180°W to
 * period/2 at 180°E (lon/lat, Web Mercator); 0 when it does not (a UTM zone, a polar
 * projection, a Mercator centred elsewhere).
 */
function periodOf(crs: Crs): number {
  let period = periods.get(crs.definition);
  if (period === undefined) {
    const toCrs = conversion(LON_LAT, crs.definition);
    const [west, middle, east] = [-179.999, 0, 179.999].map((lon) => toCrs(lon, 0)[0]);
    const centred = Math.abs(middle) <= (east - west) * 1e-9 && Math.abs(east + west) <= (east - west) * 1e-6;
    period = west < middle && middle < east && centred ? ((east - west) * 180) / 179.999 : 0;
    if (periods.size >= 256) periods.clear(); // the sets' CRSs and the few areas are painted in; never unbounded
    periods.set(crs.definition, period);
  }
  return period;
}

/**
 * The outline's extent through `convert` and the resolution gdalwarp would suggest there.
 * Undefined when no part of it has coordinates there. `wrap`: a source across ±180° in a CRS
 * `period` round the Earth, where x follows longitude alone: its x spans its longitudes' share
 * (the outline's own points there jump at 180°, and lose a side that runs along a pole), and the
 * corners' distance is taken the short way round.
 */
function placedBy(full: LevelSize, pixelToCrs: Affine, convert: Conversion, wrap?: { period: number; lonLat: Box }): { extent: Box; resolution: number } | undefined {
  const points = outline(full, pixelToCrs, convert);
  if (!points) return undefined;
  const [x0, y0, x1, y1] = envelope(points);
  const extent: Box = wrap ? [(wrap.lonLat[0] * wrap.period) / 360, y0, (wrap.lonLat[2] * wrap.period) / 360, y1] : [x0, y0, x1, y1];
  return { extent, resolution: suggestedResolution(full, pixelToCrs, convert, extent, wrap?.period ?? 0) };
}

/**
 * Where the source lies in `crs`: its envelope there, and the resolution gdalwarp would suggest
 * for a warp there (what the level read is chosen by); undefined when no part of it has
 * coordinates in `crs`.
 */
export function placementIn(geo: SourceGeo, full: LevelSize, crs: Crs): { bounds: number[]; resolution: number } | undefined {
  const period = geo.acrossAntimeridian ? periodOf(crs) : 0;
  const placed = placedBy(full, geo.pixelToCrs, crsConversion(geo.crs, crs), period ? { period, lonLat: geo.info.lonLatBounds } : undefined);
  return placed && { bounds: placed.extent, resolution: placed.resolution };
}

/**
 * gdalwarp's suggested output pixel size: the distance between the transformed top-left and
 * bottom-right corners over the image's diagonal in pixels (the envelope's diagonal when a
 * corner has no image in the target CRS); in a CRS `period` round the Earth, the corners'
 * distance the short way round.
 */
function suggestedResolution(full: LevelSize, pixelToCrs: Affine, toSet: Conversion, extent: number[], period = 0): number {
  const [ax, ay] = toSet(...applyAffine(pixelToCrs, 0, 0));
  const [bx, by] = toSet(...applyAffine(pixelToCrs, full.width, full.height));
  let dx = period ? bx - ax - period * Math.round((bx - ax) / period) : bx - ax;
  let dy = by - ay;
  if (!Number.isFinite(dx) || !Number.isFinite(dy) || dx === 0 || dy === 0) {
    dx = extent[2] - extent[0];
    dy = extent[3] - extent[1];
  }
  return Math.hypot(dx, dy) / Math.hypot(full.width, full.height);
}

/**
 * The zoom whose cell size is the first at or below `resolution` (within 1e-8, for float
 * rounding): tiles there show every source pixel, as rio-tiler and titiler choose maxzoom;
 * the set's last zoom when even it is coarser. The matrices' cells shrink zoom by zoom, by
 * halves or not (CanadianNAD83_LCC's follow map scales).
 */
function zoomFor(tms: TileMatrixSet, resolution: number): number {
  const matrices = tms.tileMatrices;
  return (matrices.find((m) => m.cellSize <= resolution * (1 + 1e-8)) ?? matrices[matrices.length - 1]).zoom;
}

/** The image's edges, densified, converted; the points that have coordinates there (none: undefined). */
function outline(full: LevelSize, pixelToCrs: Affine, convert: (x: number, y: number) => [number, number]): [number, number][] | undefined {
  const points = perimeter(full)
    .map(([c, r]) => convert(...applyAffine(pixelToCrs, c, r)))
    .filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]));
  return points.length > 0 ? points : undefined;
}

/** Pixel positions around the image, clockwise from the top-left corner, each edge in EDGE_SEGMENTS steps. */
function perimeter({ width, height }: LevelSize): [number, number][] {
  const steps = Array.from({ length: EDGE_SEGMENTS }, (_, i) => i / EDGE_SEGMENTS);
  return [
    ...steps.map((f): [number, number] => [f * width, 0]),
    ...steps.map((f): [number, number] => [width, f * height]),
    ...steps.map((f): [number, number] => [(1 - f) * width, height]),
    ...steps.map((f): [number, number] => [0, (1 - f) * height]),
  ];
}

const corners = ({ width, height }: LevelSize): [number, number][] => [
  [0, 0],
  [width, 0],
  [0, height],
  [width, height],
];

function envelope(points: [number, number][]): Box {
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}
