// A mosaic source: a MosaicJSON or STAC document pinned to one version, read whole once, and the
// assets each tile paints. Its members are COGs opened on demand (store keys or HTTP(S) URLs,
// under the access policy); a mosaic lies on WebMercatorQuad, the grid MosaicJSON's quadkeys
// index, as its document says, and on every other set as one image in Web Mercator of its
// maxzoom's pixels would: a tile there paints the assets whose entries meet its outline in Web
// Mercator. It is a map only: it has no IIIF image.
import { badGateway, HttpError } from "../../shared/errors";
import { MOSAIC_TMS, mosaicAssets, mosaicAssetsIn, parseMosaicJson, type MosaicJson } from "../../shared/maps/mosaic-json";
import type { StyleFields } from "../../shared/maps/style";
import { parseExpressions } from "../../shared/maps/expression";
import { assetBandNames, loadStac, type StacItem } from "../../shared/maps/stac";
import { TILE_MATRIX_SETS, tileBounds, tileMatrix, tileMatrixSet, zoomRange } from "../../shared/maps/tile-matrix-sets";
import { setWidth } from "../../shared/maps/antimeridian";
import type { TileRequest } from "../../shared/maps/tile-request";
import type { AssetDescription, Georeference, MosaicSummary, SourceInfo, SourceTiling } from "../../shared/protocol";
import { tilingOn } from "../cog/georeference";
import { envelopeIn } from "../maps/areas";
import { conversion, LON_LAT, setCrs } from "../maps/crs";
import { sourceFault, type Source } from "../source/source";

/** One asset a tile paints: a COG whose bands the request chooses, or a STAC item's chosen bands. */
export type AssetRef =
  | { kind: "cog"; asset: string }
  | { kind: "item"; label: string; bands: { name: string; asset: string; band: number }[] };

/** The style's fields that choose a STAC item's assets and bands. */
export type AssetChoice = Pick<StyleFields, "assets" | "assetBidx" | "expression">;

/** What chooses a mosaic's assets for a tile: the tile, and the style's asset fields. */
export type AssetQuery = Pick<TileRequest, "tileMatrixSet" | "z" | "x" | "y"> & AssetChoice;

/** What a mosaic's document says, whatever its format. */
export interface MosaicIndex {
  kind: MosaicSummary["kind"];
  /** West, south, east, north in degrees. */
  bounds: [number, number, number, number];
  minzoom: number;
  maxzoom: number;
  summary: MosaicSummary;
  /** The assets tile `req` paints, in paint order. */
  assetsFor(req: AssetQuery): AssetRef[];
  /** The assets an area meeting `bounds` (Web Mercator metres) paints with `style`, in paint order. */
  assetsIn(bounds: [number, number, number, number], style: AssetChoice): AssetRef[];
}

export class Mosaic {
  /** Where it lies: the same for every id it is served under, made once (every set's tiling). */
  private placed?: Georeference;

  private constructor(
    readonly source: Source,
    readonly index: MosaicIndex,
  ) {}

  /**
   * Reads and checks the document behind `source`; a broken document is the store's fault (502),
   * what is wrong with it for the log alone (it names the documents a catalog links to, and hrefs).
   * `assets` opens what the document links to (a STAC catalog's items, a member to learn zooms).
   */
  static async open(source: Source, assets: MosaicAssets, signal?: AbortSignal): Promise<Mosaic> {
    const text = await readDocument(source, signal);
    try {
      const index = source.document?.kind === "stac" ? await stacIndex(text, source.document.key, assets, signal) : mosaicJsonIndex(parseMosaicJson(text));
      return new Mosaic(source, index);
    } catch (e) {
      if (e instanceof HttpError && e.kind === "bad_request") {
        const format = source.document?.kind === "stac" ? "STAC" : "MosaicJSON";
        throw badGateway(`the mosaic's ${format} document is invalid`, `mosaic document ${source.label}: ${e.message}`);
      }
      throw e;
    }
  }

  info(id: string): SourceInfo {
    const { bounds, minzoom, maxzoom, summary } = this.index;
    const georeference = (this.placed ??= mosaicGeoreference(bounds, minzoom, maxzoom));
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
      ...(this.source.access && { access: this.source.access }),
      ...(this.source.description && { description: this.source.description }),
    };
  }

  async close(): Promise<void> {
    await this.source.close();
  }
}

/** A document is read whole; one past the largest a mosaic may be is refused before reading. */
const MAX_DOCUMENT_BYTES = 32 * 1024 * 1024;

/** How a mosaic reaches what its document names, under the access policy. */
export interface MosaicAssets {
  /** The asset's bytes as a Source (the caller closes it). */
  open(asset: string, signal?: AbortSignal): Promise<Source>;
  /** The COG at `asset` as /info describes it, once opened (its zooms stand for a STAC source's); undefined when it is not georeferenced. */
  describe(asset: string, signal?: AbortSignal): Promise<AssetDescription | undefined>;
}

export async function readDocument(source: Source, signal?: AbortSignal): Promise<string> {
  if (source.size > MAX_DOCUMENT_BYTES) {
    throw sourceFault(source.label, `the mosaic's document is ${source.size} bytes, more than the ${MAX_DOCUMENT_BYTES} a document may be`);
  }
  // A small document came whole with the read that opened it: no second round trip for it.
  const opened = source.firstBytes?.length === source.size ? source.firstBytes : undefined;
  return new TextDecoder().decode(opened ?? (await source.read(0, source.size, signal)));
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
    summary: { kind: "mosaic", assets: distinct.size, maxAssetsPerKey, quadkeyZoom: doc.quadkeyZoom, quadkeys: doc.assets.size },
    assetsFor: (req) =>
      req.tileMatrixSet === MOSAIC_TMS ? mosaicAssets(doc, req.z, req.x, req.y).map((asset) => ({ kind: "cog", asset })) : assetsOnOtherSet(req, (bounds) => mosaicAssetsIn(doc, bounds).map((asset) => ({ kind: "cog", asset }))),
    assetsIn: (bounds) => mosaicAssetsIn(doc, bounds).map((asset) => ({ kind: "cog", asset })),
  };
}

/**
 * A STAC Item, ItemCollection or static catalog: its items (a catalog's linked documents read
 * through `assets`), each painting the tiles its bbox meets, in document order; the bands each
 * brings are the request's `assets=` (and `asset_bidx`). Its zooms are those of its first item's
 * first asset.
 */
async function stacIndex(text: string, key: string, assets: MosaicAssets, signal?: AbortSignal): Promise<MosaicIndex> {
  const load = async (href: string) => {
    const source = await assets.open(href, signal);
    try {
      return await readDocument(source, signal);
    } finally {
      await source.close();
    }
  };
  const items = await loadStac(text, key, load);
  if (items.length === 0) throw sourceFault(key, "the STAC document has no items");
  const [firstKey, firstAsset] = Object.entries(items[0].assets)[0] ?? [];
  if (!firstAsset) throw badGateway(`STAC item ${items[0].id} has no assets`);
  const first = await assets.describe(firstAsset.href, signal);
  const tiling = first?.georeference.tiling[MOSAIC_TMS];
  if (!first || !tiling) throw badGateway(`STAC item ${items[0].id}: its asset is not a georeferenced COG on ${MOSAIC_TMS}`);
  const described = { [firstKey]: first, ...(await describeOthers(items[0], assets, signal)) };
  const bounds = unionOfBoxes(items.map((i) => i.bbox));
  const tms = tileMatrixSet(MOSAIC_TMS);
  return {
    kind: "stac",
    bounds,
    minzoom: tiling.minZoom,
    maxzoom: tiling.maxZoom,
    summary: { kind: "stac", assets: items.length, maxAssetsPerKey: items.length, quadkeyZoom: 0, stacAssets: described },
    assetsFor: (req) =>
      req.tileMatrixSet === MOSAIC_TMS ? itemsMeeting(items, tileBounds(tms, req.z, req.x, req.y), req) : assetsOnOtherSet(req, (bounds) => itemsMeeting(items, bounds, req)),
    assetsIn: (bounds, style) => itemsMeeting(items, bounds, style),
  };
}

/** The first item's assets /info describes at most: a header read each, when the source opens. */
const DESCRIBED_ASSETS = 16;
/** Assets opened at once. */
const DESCRIBED_AT_ONCE = 4;

/**
 * The item's next assets up to DESCRIBED_ASSETS in all, as /info describes them: those that are
 * georeferenced COGs, in the item's order. Any other (a thumbnail, metadata, one that cannot be
 * read now) is left out: the first asset alone decides whether the source opens.
 */
async function describeOthers(item: StacItem, assets: MosaicAssets, signal?: AbortSignal): Promise<Record<string, AssetDescription>> {
  const entries = Object.entries(item.assets).slice(1, DESCRIBED_ASSETS);
  const described: Record<string, AssetDescription> = {};
  for (let i = 0; i < entries.length; i += DESCRIBED_AT_ONCE) {
    const batch = entries.slice(i, i + DESCRIBED_AT_ONCE);
    const opened = await Promise.allSettled(batch.map(([, asset]) => assets.describe(asset.href, signal)));
    opened.forEach((o, j) => {
      if (o.status === "fulfilled" && o.value) described[batch[j][0]] = o.value;
    });
  }
  return described;
}

/** The items' bboxes as one: a box across 180° (its east edge past it) at most once round the Earth. */
function unionOfBoxes(boxes: [number, number, number, number][]): [number, number, number, number] {
  const [west, east] = [Math.min(...boxes.map((b) => b[0])), Math.max(...boxes.map((b) => b[2]))];
  const south = Math.min(...boxes.map((b) => b[1]));
  const north = Math.max(...boxes.map((b) => b[3]));
  return east - west >= 360 ? [-180, south, 180, north] : [west, south, east, north];
}

/**
 * The items whose bbox meets `bounds` (Web Mercator metres), each with the bands `style` reads of
 * it; an item across 180° (its bbox's east edge past it) meets a box on the far west too.
 */
function itemsMeeting(items: StacItem[], bounds: [number, number, number, number], style: AssetChoice): AssetRef[] {
  const [w, s, e, n] = lonLatOfMercator(bounds);
  const meets = (b: [number, number, number, number], shift: number) => b[0] < e + shift && b[2] > w + shift && b[1] < n && b[3] > s;
  return items
    .filter((item) => meets(item.bbox, 0) || meets(item.bbox, 360))
    .map((item) => ({
      kind: "item" as const,
      label: item.id,
      bands: assetBandNames(item, stacKeys(item, style), Object.fromEntries(style.assetBidx ?? [])).map((b) => ({ name: b.name, asset: b.href, band: b.band })),
    }));
}

/**
 * The asset keys a request reads of `item`: its `assets=`, else those its expression names (`B04`,
 * or `visual` for `visual_b1`), as titiler infers them; neither: undefined (400 from the lookup).
 */
function stacKeys(item: StacItem, req: AssetChoice): string[] | undefined {
  if (req.assets) return req.assets;
  if (req.expression === undefined) return undefined;
  const names = parseExpressions(req.expression, "any").bands;
  return [...new Set(names.map((name) => (Object.hasOwn(item.assets, name) ? name : name.replace(/_b\d+$/, ""))))];
}

/** Web Mercator bounds [minX, minY, maxX, maxY] as [west, south, east, north] degrees. */
function lonLatOfMercator([x0, y0, x1, y1]: [number, number, number, number]): [number, number, number, number] {
  const toLonLat = conversion(setCrs(MOSAIC_TMS).definition, LON_LAT);
  const [w, s] = toLonLat(x0, y0);
  const [e, n] = toLonLat(x1, y1);
  return [w, s, e, n];
}

/** Where a mosaic lies: its lon/lat bounds, on WebMercatorQuad between its zooms, and on every other set it meets. */
function mosaicGeoreference(bounds: [number, number, number, number], minZoom: number, maxZoom: number): Georeference {
  const toMercator = conversion(LON_LAT, setCrs(MOSAIC_TMS).definition);
  // Web Mercator ends at ±85.0511°: a mosaic's bounds past it are clamped to the square.
  const limit = 85.0511287798066;
  const clamp = (lat: number) => Math.max(-limit, Math.min(limit, lat));
  const tms = tileMatrixSet(MOSAIC_TMS);
  // Across 180° the east edge lies past the set's, once round the Earth from where PROJ puts it.
  const across = bounds[2] > 180;
  const [x0, y0] = toMercator(bounds[0], clamp(bounds[1]));
  const [east, y1] = toMercator(across ? bounds[2] - 360 : bounds[2], clamp(bounds[3]));
  const x1 = across ? east + setWidth(tms) : east;
  const top = Math.min(maxZoom, zoomRange(tms)[1]);
  const web: SourceTiling = { bounds: [x0, y0, x1, y1], minZoom: Math.min(minZoom, top), maxZoom: top, resolution: tileMatrix(tms, top)!.cellSize };
  return { crs: "EPSG:4326", bbox: bounds, lonLatBounds: bounds, tiling: { ...otherSets(web, bounds, across), [MOSAIC_TMS]: web } };
}

/**
 * The mosaic on every set but WebMercatorQuad: as one image in Web Mercator of its maxzoom's
 * pixels with an overview at its minzoom's, tiled as a COG is (its outline there, the resolution
 * gdalwarp would choose, the zooms that give).
 */
function otherSets(web: SourceTiling, lonLat: [number, number, number, number], across: boolean): Record<string, SourceTiling> {
  const [x0, y0, x1, y1] = web.bounds;
  const cell = web.resolution;
  const full = { width: Math.max(1, Math.round((x1 - x0) / cell)), height: Math.max(1, Math.round((y1 - y0) / cell)) };
  const shrink = 2 ** (web.maxZoom - web.minZoom);
  const smallest = { width: Math.max(1, Math.round(full.width / shrink)), height: Math.max(1, Math.round(full.height / shrink)) };
  const tiling: Record<string, SourceTiling> = {};
  for (const tms of TILE_MATRIX_SETS.values()) {
    const on = tms.id === MOSAIC_TMS ? undefined : tilingOn(tms, [full, smallest], [x0, cell, 0, y1, 0, -cell], setCrs(MOSAIC_TMS), across ? "across the antimeridian" : "on the Earth", lonLat);
    if (on) tiling[tms.id] = on;
  }
  return tiling;
}

/** Tile `req` of another set than WebMercatorQuad as a box in Web Mercator (its edges densified), or undefined where it has none. */
function mercatorOutline(req: AssetQuery): [number, number, number, number] | undefined {
  const tms = tileMatrixSet(req.tileMatrixSet);
  try {
    return envelopeIn(tileBounds(tms, req.z, req.x, req.y), setCrs(tms.id), setCrs(MOSAIC_TMS));
  } catch (e) {
    if (e instanceof HttpError && e.kind === "bad_request") return undefined; // no point of it in Web Mercator (a pole)
    throw e;
  }
}

/** The assets whose index entries meet tile `req`'s outline in Web Mercator (`lookup` finds them there). */
function assetsOnOtherSet(req: AssetQuery, lookup: (bounds: [number, number, number, number]) => AssetRef[]): AssetRef[] {
  const bounds = mercatorOutline(req);
  return bounds ? lookup(bounds) : [];
}
