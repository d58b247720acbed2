// The output grid of an area a client names, as rio-tiler lays it out: a preview is the whole
// source on its own grid (its rotation kept), its longest side at most max_size, never enlarged;
// a box (a feature's: its bounds) is the box's envelope in the CRS painted in, at the exact size asked, else at the source's
// own resolution there (gdalwarp's suggested one), shrunk to max_size. The grid is then warped
// like a tile (warp.ts), so a crop and a tile of the same ground read the same pixels.
import { badRequest } from "../../shared/errors";
import { fit } from "../../shared/maps/area-cost";
import type { AreaRequest } from "../../shared/maps/area-request";
import type { LevelSize } from "../../shared/levels";
import { MOSAIC_TMS } from "../../shared/maps/mosaic-json";
import type { SourceInfo } from "../../shared/protocol";
import { placementIn, type SourceGeo } from "../cog/georeference";
import { crsConversion, crsOfName, setCrs, type Crs } from "./crs";
import type { OutputGrid } from "./warp";

/** Points a side of a box is densified to when it is converted (GDAL's transformBounds takes 21). */
const EDGE_POINTS = 21;

/** The grid `req` paints `cog` on; 400 for a CRS the bundled tables lack or a box with no place in the CRS painted in. */
export function areaGrid(full: LevelSize, geo: SourceGeo, req: AreaRequest): OutputGrid {
  if (req.kind === "preview") {
    const { width, height } = req.width !== undefined ? { width: req.width, height: req.height! } : fit(full.width, full.height, req.maxSize);
    const [t0, t1, t2, t3, t4, t5] = geo.pixelToCrs;
    const kx = full.width / width;
    const ky = full.height / height;
    return { crs: geo.crs, affine: [t0, t1 * kx, t2 * ky, t3, t4 * kx, t5 * ky], width, height };
  }
  const dst = req.dstCrs === undefined ? geo.crs : known(req.dstCrs, "dst_crs");
  const [x0, y0, x1, y1] = envelopeIn(req.bbox!, known(req.coordCrs, "coord_crs"), dst);
  let [width, height] = [req.width, req.height];
  if (width === undefined || height === undefined) {
    const placement = placementIn(geo, full, dst);
    if (!placement) throw badRequest(`the source has no place in ${dst.name}`);
    const native = [Math.max(1, Math.round((x1 - x0) / placement.resolution)), Math.max(1, Math.round((y1 - y0) / placement.resolution))];
    ({ width, height } = fit(native[0], native[1], req.maxSize));
  }
  return { crs: dst, affine: [x0, (x1 - x0) / width, 0, y1, 0, -(y1 - y0) / height], width, height };
}

/**
 * A mosaic as one source for an area: its bounds on WebMercatorQuad at its maxzoom's resolution,
 * the grid its info describes, in Web Mercator.
 */
export function mosaicPlacement(info: SourceInfo): { full: LevelSize; geo: SourceGeo } {
  const georeference = info.georeference!;
  const { bounds, resolution } = georeference.tiling[MOSAIC_TMS];
  return {
    full: info.levels[0],
    geo: { crs: setCrs(MOSAIC_TMS), pixelToCrs: [bounds[0], resolution, 0, bounds[3], 0, -resolution], info: georeference },
  };
}

/** The grid's envelope in `crs` (Web Mercator for a mosaic's index). */
export function gridBoundsIn(grid: OutputGrid, crs: Crs): [number, number, number, number] {
  const [x0, cx, rx, y0, ry, cy] = grid.affine;
  const xs = [x0, x0 + grid.width * cx, x0 + grid.height * rx, x0 + grid.width * cx + grid.height * rx];
  const ys = [y0, y0 + grid.width * ry, y0 + grid.height * cy, y0 + grid.width * ry + grid.height * cy];
  return envelopeIn([Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)], grid.crs, crs);
}

function known(name: string, what: string): Crs {
  const crs = crsOfName(name);
  if (!crs) throw badRequest(`${what} ${name} is not a coordinate reference system this server knows`);
  return crs;
}

/** The box's envelope in `to`, its edges densified; 400 when no part of it has coordinates there. */
export function envelopeIn(bbox: [number, number, number, number], from: Crs, to: Crs): [number, number, number, number] {
  const convert = crsConversion(from, to);
  const [minx, miny, maxx, maxy] = bbox;
  const out = [Infinity, Infinity, -Infinity, -Infinity];
  for (let i = 0; i < EDGE_POINTS; i++) {
    const f = i / (EDGE_POINTS - 1);
    const x = minx + f * (maxx - minx);
    const y = miny + f * (maxy - miny);
    for (const [px, py] of [convert(x, miny), convert(x, maxy), convert(minx, y), convert(maxx, y)]) {
      if (!Number.isFinite(px) || !Number.isFinite(py)) continue;
      out[0] = Math.min(out[0], px);
      out[1] = Math.min(out[1], py);
      out[2] = Math.max(out[2], px);
      out[3] = Math.max(out[3], py);
    }
  }
  if (!(out[0] < out[2] && out[1] < out[3])) throw badRequest(`the box has no place in ${to.name}`);
  return out as [number, number, number, number];
}
