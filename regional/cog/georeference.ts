// Where a source lies on the Earth, read from its GeoTIFF tags as GDAL reads them: the CRS its
// GeoKeys define (an EPSG code, or a user-defined CRS spelled out in the keys), the affine
// transform from pixels to that CRS (ModelTiepoint + ModelPixelScale, or ModelTransformation;
// shifted half a pixel for PixelIsPoint rasters), and what the map routes derive from them: the
// bounds in longitude/latitude and in each tile matrix set's CRS, and the zooms to tile at. A
// source without them (a scan, the IIIF test pattern), whose CRS cannot be resolved, or whose
// outline has no place on the Earth (a point without longitude and latitude, or past a pole) is
// an image only. A source across longitude ±180° is georeferenced but not tiled: the tile
// matrix sets' bounds and the warp take longitudes within −180…180, so its tiles would be wrong.
// It also places a grid of control points and the outline in longitude and latitude, which the
// edge (no proj4 there) builds the manifest's navPlace and georeference annotation from.
import type { GeoTIFFImage } from "geotiff";
import { FOOTPRINT_PER_SIDE, GRID_SIDE, type ControlPoint, type Georeference, type SourceTiling } from "../../shared/protocol";
import type { LevelSize } from "../../shared/levels";
import { TILE_MATRIX_SETS, type TileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { conversion, crsConversion, crsOfGeoKeys, LON_LAT, setConversion, type Crs } from "../maps/crs";
import { applyAffine, type Affine } from "../maps/transformer";
import type { Log } from "../runtime/log";

/** A georeferenced source as the warp uses it, and as SourceInfo describes it. */
export interface SourceGeo {
  crs: Crs;
  /** Full-resolution pixel (column, row) → the CRS's coordinates, in proj4's units. */
  pixelToCrs: Affine;
  info: Georeference;
}

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
  const place = placeOnEarth(lonLat, pixelDiagonal(pixelToCrs, toLonLat));
  if (place === "nowhere") {
    unusable("its outline has no place on the Earth");
    return undefined;
  }
  const crossing = place === "across the antimeridian";
  const tiling: Record<string, SourceTiling> = {};
  for (const tms of crossing ? [] : TILE_MATRIX_SETS.values()) {
    const on = tilingOn(tms, levels, pixelToCrs, crs);
    if (on) tiling[tms.id] = on;
  }
  const info: Georeference = { crs: crs.name, bbox, lonLatBounds: envelope(lonLat), tiling, ...(crossing && { crossesAntimeridian: true }) };
  const placed = controlPoints(full, (c, r) => toLonLat(...applyAffine(pixelToCrs, c, r)));
  // Across ±180° a GeoJSON outline and a fit in longitude would wrap the wrong way round the world.
  if (crossing) unusable("no control points: it crosses the antimeridian");
  else if (!placed) unusable("no control points: a point of its grid or outline has no longitude and latitude");
  else Object.assign(info, placed);
  return { crs, pixelToCrs, info };
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
 * "nowhere" when a point has no longitude and latitude or lies past a pole; "across the
 * antimeridian" when it goes past longitude ±180° or jumps half the world between neighbours
 * (a projected source that straddles ±180°, or one around a pole). `slack`, about a pixel,
 * lets a global raster's edge pixels reach a little past ±180° and ±90°.
 */
function placeOnEarth(lonLat: [number, number][], slack: number): "on the Earth" | "across the antimeridian" | "nowhere" {
  if (!lonLat.every(([lon, lat]) => Number.isFinite(lon) && Math.abs(lat) <= 90 + slack)) return "nowhere";
  const past = lonLat.some(([lon]) => Math.abs(lon) > 180 + slack);
  const jumps = lonLat.some(([lon], i) => Math.abs(lon - lonLat[(i + 1) % lonLat.length][0]) > 180);
  return past || jumps ? "across the antimeridian" : "on the Earth";
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
export function tilingOn(tms: TileMatrixSet, levels: LevelSize[], pixelToCrs: Affine, crs: Crs): SourceTiling | undefined {
  const toSet = setConversion(crs, tms.id);
  const points = outline(levels[0], pixelToCrs, toSet);
  if (!points) return undefined;
  const [minX, minY, maxX, maxY] = tms.extent;
  const [x0, y0, x1, y1] = envelope(points);
  const bounds: [number, number, number, number] = [Math.max(x0, minX), Math.max(y0, minY), Math.min(x1, maxX), Math.min(y1, maxY)];
  if (!(bounds[0] < bounds[2] && bounds[1] < bounds[3])) return undefined;
  const resolution = suggestedResolution(levels[0], pixelToCrs, toSet, [x0, y0, x1, y1]);
  const smallest = levels[levels.length - 1];
  const shrink = Math.max(levels[0].width / smallest.width, levels[0].height / smallest.height);
  const maxZoom = zoomFor(tms, resolution);
  return { bounds, minZoom: Math.min(zoomFor(tms, resolution * shrink), maxZoom), maxZoom, resolution };
}

/**
 * Where the source lies in `crs`: its envelope there, and the resolution gdalwarp would suggest
 * for a warp there (what the level read is chosen by); undefined when no part of it has
 * coordinates in `crs`.
 */
export function placementIn(geo: SourceGeo, full: LevelSize, crs: Crs): { bounds: number[]; resolution: number } | undefined {
  const toGrid = crsConversion(geo.crs, crs);
  const points = outline(full, geo.pixelToCrs, toGrid);
  if (!points) return undefined;
  const bounds = envelope(points);
  return { bounds, resolution: suggestedResolution(full, geo.pixelToCrs, toGrid, bounds) };
}

/**
 * gdalwarp's suggested output pixel size: the distance between the transformed top-left and
 * bottom-right corners over the image's diagonal in pixels (the envelope's diagonal when a
 * corner has no image in the target CRS).
 */
function suggestedResolution(full: LevelSize, pixelToCrs: Affine, toSet: (x: number, y: number) => [number, number], extent: number[]): number {
  const [ax, ay] = toSet(...applyAffine(pixelToCrs, 0, 0));
  const [bx, by] = toSet(...applyAffine(pixelToCrs, full.width, full.height));
  let dx = bx - ax;
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

function envelope(points: [number, number][]): [number, number, number, number] {
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}
