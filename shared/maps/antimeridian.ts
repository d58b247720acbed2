// Bounds across longitude ±180°. A source across it keeps one box, unwrapped: its west edge within
// −180…180 (within the set, on a set that goes round the Earth) and its east edge past 180° (past
// the set's east edge), the part past it being the part on the far west. A tile, an area or a
// point asked on that western side is moved once round the Earth to meet the box. Documents
// (TileJSON, /info) give the east edge wrapped back, so west > east, as TileJSON and STAC do.
import type { TileMatrixSet } from "./tile-matrix-sets";

type Box = readonly [number, number, number, number];

/** How far x goes once round the Earth on `tms`, its width (only sets that do go round have bounds past their edge). */
export const setWidth = (tms: TileMatrixSet) => tms.extent[2] - tms.extent[0];

/** `box`, or `box` moved `period` east when only that meets `bounds`: the same ground, where the bounds have it. */
export function ontoBounds(box: Box, bounds: Box, period: number): [number, number, number, number] {
  const meets = (b: Box) => b[0] < bounds[2] && b[2] > bounds[0];
  const east: [number, number, number, number] = [box[0] + period, box[1], box[2] + period, box[3]];
  return !meets(box) && meets(east) ? east : [...box];
}

/** Whether the point (x, y) lies within `bounds`, or one `period` east of it does. */
export function holdsPoint(bounds: Box, x: number, y: number, period = 360): boolean {
  const within = (px: number) => px >= bounds[0] && px <= bounds[2] && y >= bounds[1] && y <= bounds[3];
  return within(x) || within(x + period);
}

/** A document's [west, south, east, north] with west > east (across 180°) as one box, its east edge past 180°. */
export function unwrappedBox([west, south, east, north]: Box): [number, number, number, number] {
  return [west, south, west > east ? east + 360 : east, north];
}

/** Longitude and latitude bounds as a document gives them: an east edge past 180° wrapped, so west > east. */
export function documentBounds([west, south, east, north]: Box): [number, number, number, number] {
  return [west, south, east > 180 ? east - 360 : east, north];
}

/** The longitude midway between the bounds' west and east edges, within −180…180. */
export function middleLongitude([west, , east]: Box): number {
  const middle = (west + east) / 2;
  return middle > 180 ? middle - 360 : middle;
}
