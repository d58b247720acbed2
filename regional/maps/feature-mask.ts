// A feature's mask on an output grid, as GDAL's rasterizer makes it (gdal_rasterize, and the
// cutline's mask): a pixel is inside when its centre is, each polygon's rings filled together by
// the even-odd rule (holes, and a self-intersecting ring's lobes alike), a MultiPolygon the
// union of its parts. Row by row, the edges that cross the row's centre line are intersected with
// it and the spans between pairs filled; an edge counts on [lower y, upper y), horizontal ones
// not at all, and a span fills the columns from ⌊x₀ + ½⌋ up to ⌊x₁ + ½⌋, as GDAL rounds them.
// Vertices are projected (no densifying, as rio-tiler's transform_geom), then mapped to the
// grid's pixels by the inverse of its affine transform.
import { polygonsOf, ringsOf, type Geometry } from "../../shared/maps/feature";
import type { Cost } from "../../shared/cost";
import { megasamples } from "../../shared/work";
import type { Slices } from "../runtime/slices";
import { conversion, LON_LAT, type Crs } from "./crs";
import { applyAffine, invertAffine, type Affine } from "./transformer";

/** A polygon's rings in the grid's pixel coordinates (column, row; continuous, 0 at the top-left corner). */
export type PixelRings = [number, number][][];

/** The geometry's polygons (longitude, latitude) in the pixels of a grid in `crs`. */
export function ringsInGrid(geometry: Geometry, crs: Crs, affine: Affine): PixelRings[] {
  const project = conversion(LON_LAT, crs.definition);
  const toPixel = invertAffine(affine);
  const [sx, sy] = crs.unitScale;
  return polygonsOf(geometry).map((rings) =>
    rings.map((ring) =>
      ring.map(([lon, lat]) => {
        const [x, y] = project(lon, lat);
        return applyAffine(toPixel, x / sx, y / sy);
      }),
    ),
  );
}

/** The geometry's bounds in `crs`, from its projected vertices: the area a feature's statistics read. */
export function boundsInCrs(geometry: Geometry, crs: Crs): [number, number, number, number] {
  const project = conversion(LON_LAT, crs.definition);
  const [sx, sy] = crs.unitScale;
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const ring of ringsOf(geometry)) {
    for (const [lon, lat] of ring) {
      const [px, py] = project(lon, lat);
      const [x, y] = [px / sx, py / sy];
      x0 = Math.min(x0, x);
      y0 = Math.min(y0, y);
      x1 = Math.max(x1, x);
      y1 = Math.max(y1, y);
    }
  }
  return [x0, y0, x1, y1];
}

/** One non-horizontal edge, lower end first, and the rows whose centre line it crosses. */
interface Edge {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
  firstRow: number;
  lastRow: number;
}

/** Every edge that crosses a row centre of a `height`-row grid. Non-finite vertices (no image in the CRS) drop their edges. */
function edgesOf(rings: PixelRings, height: number): Edge[] {
  const edges: Edge[] = [];
  for (const ring of rings) {
    for (let i = 0; i + 1 < ring.length; i++) {
      let [[x0, y0], [x1, y1]] = [ring[i], ring[i + 1]];
      if (y0 === y1 || ![x0, y0, x1, y1].every(Number.isFinite)) continue;
      if (y0 > y1) [x0, y0, x1, y1] = [x1, y1, x0, y0];
      // Row r's centre line is y = r + 0.5; the edge holds it when y0 <= r + 0.5 < y1.
      const firstRow = Math.max(0, Math.ceil(y0 - 0.5));
      const lastRow = Math.min(height - 1, Math.ceil(y1 - 0.5) - 1);
      if (firstRow <= lastRow) edges.push({ x0, y0, x1, y1, firstRow, lastRow });
    }
  }
  return edges;
}

/** Units per million of the fill's edge–row crossings and of the mask's pixels. */
const MASK_WORK = { crossing: 60, pixel: 2 };

/** What masking `polygons` on a `width` × `height` grid costs: the mask's bytes, and the fill's work. */
export function maskCost(polygons: PixelRings[], width: number, height: number): Cost {
  return { bytes: width * height, work: megasamples(maskCrossings(polygons, height), MASK_WORK.crossing) + megasamples(width * height, MASK_WORK.pixel) };
}

/** Edge–row crossings the fill computes: its work, known before it runs (O(edges)). */
export function maskCrossings(polygons: PixelRings[], height: number): number {
  return polygons.reduce((sum, rings) => sum + edgesOf(rings, height).reduce((n, e) => n + e.lastRow - e.firstRow + 1, 0), 0);
}

/** The mask (1 inside) of `polygons` on a `width` × `height` grid, a row a step of `slices`. */
export async function featureMask(polygons: PixelRings[], width: number, height: number, slices: Slices): Promise<Uint8Array> {
  const mask = new Uint8Array(width * height);
  for (const rings of polygons) await fill(mask, rings, width, height, slices);
  return mask;
}

/** Sets to 1 the pixels of `mask` whose centres one polygon's rings hold (even-odd). */
async function fill(mask: Uint8Array, rings: PixelRings, width: number, height: number, slices: Slices): Promise<void> {
  const edges = edgesOf(rings, height).sort((a, b) => a.firstRow - b.firstRow);
  let next = 0;
  let active: Edge[] = [];
  const xs: number[] = [];
  for (let row = 0; row < height && (next < edges.length || active.length > 0); row++) {
    await slices.pause();
    while (next < edges.length && edges[next].firstRow <= row) active.push(edges[next++]);
    active = active.filter((e) => e.lastRow >= row);
    const y = row + 0.5;
    xs.length = 0;
    for (const e of active) xs.push(Math.floor(((y - e.y0) * (e.x1 - e.x0)) / (e.y1 - e.y0) + e.x0 + 0.5));
    xs.sort((a, b) => a - b);
    for (let i = 0; i + 1 < xs.length; i += 2) {
      const from = Math.max(0, xs[i]);
      const to = Math.min(width, xs[i + 1]);
      if (from < to) mask.fill(1, row * width + from, row * width + to);
    }
  }
}
