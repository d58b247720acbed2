// Sources across longitude ±180° are not tiled: the tile matrix sets' bounds, TileJSON's bounds
// and the warp all take longitudes within −180…180, so such a source's tiles, bounds and zooms
// would be wrong. Its map routes say so with 501; its IIIF routes serve it as an image.
import { unsupported } from "../errors";

export const acrossAntimeridian = (id: string) =>
  unsupported(`source "${id}" crosses the antimeridian (longitude ±180°): map tiles cannot serve it yet; its IIIF image routes do`);
