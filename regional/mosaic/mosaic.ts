// A mosaic source: a MosaicJSON or STAC document pinned to one version, read whole once, and the
// assets each tile paints. Its members are COGs opened on demand (store keys or HTTP(S) URLs,
// under the access policy); a mosaic is tiled on WebMercatorQuad, the grid MosaicJSON's quadkeys
// index, and is a map only: it has no IIIF image.
import { HttpError, notFound } from "../../shared/errors";
import { mosaicAssets, parseMosaicJson, type MosaicJson } from "../../shared/maps/mosaic-json";
import { tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import type { TileRequest } from "../../shared/maps/tile-request";
import type { Georeference, MosaicSummary, SourceInfo } from "../../shared/protocol";
import { conversion, LON_LAT, TMS_CRS } from "../maps/crs";
import type { Source } from "../source/source";

/** The one tile matrix set mosaics are served on. */
export const MOSAIC_TMS = "WebMercatorQuad";

/** One asset a tile paints: a COG whose bands the request chooses, or a STAC item's chosen bands. */
export type AssetRef =
  | { kind: "cog"; asset: string }
  | { kind: "item"; label: string; bands: { name: string; asset: string; band: number }[] };

/** What a mosaic's document says, whatever its format. */
export interface MosaicIndex {
  kind: MosaicSummary["kind"];
  /** West, south, east, north in degrees. */
  bounds: [number, number, number, number];
  minzoom: number;
  maxzoom: number;
  summary: MosaicSummary;
  /** The assets tile `req` paints, in paint order. */
  assetsFor(req: TileRequest): AssetRef[];
}

export class Mosaic {
  private constructor(
    readonly source: Source,
    readonly index: MosaicIndex,
  ) {}

  /** Reads and checks the document behind `source`; a broken document is the store's fault (502). */
  static async open(source: Source, signal?: AbortSignal): Promise<Mosaic> {
    const text = await readDocument(source, signal);
    try {
      return new Mosaic(source, mosaicJsonIndex(parseMosaicJson(text)));
    } catch (e) {
      if (e instanceof HttpError && e.kind === "bad_request") throw new HttpError("bad_gateway", `mosaic document ${source.label}: ${e.message}`);
      throw e;
    }
  }

  info(id: string): SourceInfo {
    const { bounds, minzoom, maxzoom, summary } = this.index;
    const georeference = mosaicGeoreference(bounds, minzoom, maxzoom);
    const { resolution, bounds: [x0, y0, x1, y1] } = georeference.tiling[MOSAIC_TMS];
    // Its pixels at maxzoom, as one image would have them: what info carries for every source.
    const width = Math.max(1, Math.round((x1 - x0) / resolution));
    const height = Math.max(1, Math.round((y1 - y0) / resolution));
    return {
      id,
      version: this.source.version,
      width,
      height,
      tileWidth: 256,
      tileHeight: 256,
      levels: [{ width, height }],
      bytes: this.source.size,
      georeference,
      mosaic: summary,
    };
  }

  async close(): Promise<void> {
    await this.source.close();
  }
}

/** A document is read whole; one past the largest a mosaic may be is refused before reading. */
const MAX_DOCUMENT_BYTES = 32 * 1024 * 1024;

async function readDocument(source: Source, signal?: AbortSignal): Promise<string> {
  if (source.size > MAX_DOCUMENT_BYTES) {
    throw new HttpError("bad_gateway", `mosaic document ${source.label} is ${source.size} bytes, more than the ${MAX_DOCUMENT_BYTES} a document may be`);
  }
  return new TextDecoder().decode(await source.read(0, source.size, signal));
}

function mosaicJsonIndex(doc: MosaicJson): MosaicIndex {
  let maxAssetsPerKey = 0;
  const distinct = new Set<string>();
  for (const assets of doc.assets.values()) {
    maxAssetsPerKey = Math.max(maxAssetsPerKey, assets.length);
    for (const a of assets) distinct.add(a);
  }
  return {
    kind: "mosaic",
    bounds: doc.bounds,
    minzoom: doc.minzoom,
    maxzoom: doc.maxzoom,
    summary: { kind: "mosaic", assets: distinct.size, maxAssetsPerKey, quadkeyZoom: doc.quadkeyZoom },
    assetsFor: (req) => (req.tileMatrixSet === MOSAIC_TMS ? mosaicAssets(doc, req.z, req.x, req.y).map((asset) => ({ kind: "cog", asset })) : []),
  };
}

/** Where a mosaic lies: its lon/lat bounds, on WebMercatorQuad between its zooms. */
export function mosaicGeoreference(bounds: [number, number, number, number], minZoom: number, maxZoom: number): Georeference {
  const toMercator = conversion(LON_LAT, TMS_CRS[MOSAIC_TMS]);
  // Web Mercator ends at ±85.0511°: a mosaic's bounds past it are clamped to the square.
  const limit = 85.0511287798066;
  const clamp = (lat: number) => Math.max(-limit, Math.min(limit, lat));
  const [x0, y0] = toMercator(bounds[0], clamp(bounds[1]));
  const [x1, y1] = toMercator(bounds[2], clamp(bounds[3]));
  const tms = tileMatrixSet(MOSAIC_TMS);
  const top = Math.min(maxZoom, tms.tileMatrices.length - 1);
  return {
    crs: "EPSG:4326",
    bbox: bounds,
    lonLatBounds: bounds,
    tiling: { [MOSAIC_TMS]: { bounds: [x0, y0, x1, y1], minZoom: Math.min(minZoom, top), maxZoom: top, resolution: tms.tileMatrices[top].cellSize } },
  };
}

/** A mosaic asked for what only a single image has. */
export const mosaicIsMapOnly = (id: string) => notFound(`source "${id}" is a mosaic: it is served as map tiles only, under /tiles/${id}/${MOSAIC_TMS}/…`);
