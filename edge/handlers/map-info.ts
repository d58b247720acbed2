// GET /info/{id} and /info/{id}.geojson: titiler's /info, from the metadata the edge has cached
// (no decode, like info.json). A COG answers rio-tiler's Info (bounds in its own CRS, the CRS as
// an OGC URI, its bands); a MosaicJSON titiler-mosaicjson's (bounds, center, zooms, the quadkeys'
// count); a STAC source titiler's STAC info: each COG asset of its first item by key, as a COG's
// (older cached metadata without them: the mosaic's). `.geojson` always asks for the Feature
// form: the bounds as a WGS 84 polygon, the info as its properties (so a source whose id ends in
// `.geojson` has no plain /info).
import type { IRequest } from "itty-router";
import { documentBounds } from "../../shared/maps/antimeridian";
import type { AssetDescription, SourceInfo } from "../../shared/protocol";
import { MOSAIC_TMS } from "../../shared/maps/mosaic-json";
import { cacheControlFor } from "../access/gate";
import { edgeConfig, type Env } from "../env";
import { documentAnswer, documentCacheControl } from "../http-cache";
import { VERSION_HEADER } from "../../shared/protocol";
import { withSource } from "./follow-version";
import { georeferencedSource } from "./map-source";

const GEOJSON = ".geojson";

export const mapInfoHandler = (req: IRequest, env: Env, ctx: ExecutionContext) => {
  const raw: string = req.params.id ?? "";
  const feature = raw.endsWith(GEOJSON);
  if (feature) req.params.id = raw.slice(0, -GEOJSON.length);
  return withSource(async (source, req, env, ctx) => {
    const config = edgeConfig(env);
    const { info, georeference, restriction } = await georeferencedSource(source, req, env, config, ctx);
    const stac = info.mosaic?.stacAssets;
    const body = stac
      ? Object.fromEntries(Object.entries(stac).map(([key, asset]) => [key, cogInfo(asset)]))
      : info.mosaic
        ? mosaicInfo(source.id, info)
        : cogInfo({ ...info, georeference });
    const doc = feature ? { type: "Feature", bbox: documentBounds(georeference.lonLatBounds), geometry: outline(georeference.lonLatBounds), properties: body } : body;
    return documentAnswer(req, JSON.stringify(doc), {
      "content-type": feature ? "application/geo+json" : "application/json",
      "cache-control": cacheControlFor(documentCacheControl(config, source), restriction),
      [VERSION_HEADER]: info.version,
    });
  })(req, env, ctx);
};

/** The bounds as a GeoJSON geometry: across 180°, its two parts (RFC 7946 cuts such a geometry there). */
function outline([west, south, east, north]: [number, number, number, number]) {
  const ring = (w: number, e: number) => [[[w, south], [e, south], [e, north], [w, north], [w, south]]];
  return east > 180 ? { type: "MultiPolygon", coordinates: [ring(west, 180), ring(-180, east - 360)] } : { type: "Polygon", coordinates: ring(west, east) };
}

/** An EPSG code as its OGC URI (what rio-tiler writes); a user-defined CRS as its PROJ string. */
export const crsUri = (crs: string) => {
  const code = /^EPSG:(\d+)$/.exec(crs)?.[1];
  return code ? `http://www.opengis.net/def/crs/EPSG/0/${code}` : crs;
};

/**
 * rio-tiler's Info of a COG. Metadata cached by a decoder older than `bands` has no band
 * fields: they are left out (the rest is known), until INFO_MAX_AGE brings fresh metadata.
 */
function cogInfo(info: AssetDescription) {
  const geo = info.georeference!;
  const tiling = geo.tiling[MOSAIC_TMS];
  const full = info.levels[0];
  const bands = info.bands;
  const names = bands?.map((_, i) => `b${i + 1}`);
  const nodata = bands?.[0]?.nodata;
  return {
    bounds: geo.bbox,
    crs: crsUri(geo.crs),
    ...(bands && {
      band_metadata: names!.map((name) => [name, {}]),
      band_descriptions: names!.map((name, i) => [name, bands[i].description]),
      dtype: bands[0].dtype,
      nodata_type: info.nodataType ?? "None",
      ...(info.nodataType === "Nodata" && nodata !== undefined && { nodata_value: nodata === "nan" ? "nan" : nodata }),
      colorinterp: bands.map((b) => b.colorinterp),
      scales: bands.map((b) => b.scale),
      offsets: bands.map((b) => b.offset),
      count: bands.length,
    }),
    // GDAL's decimation factors: the full width over each overview's.
    overviews: info.levels.slice(1).map((level) => Math.round(full.width / level.width)),
    width: full.width,
    height: full.height,
    driver: "GTiff",
    ...(tiling && { minzoom: tiling.minZoom, maxzoom: tiling.maxZoom }),
  };
}

/** titiler-mosaicjson's info: the index's bounds, center and zooms, and how many quadkeys it lists (not the list). */
function mosaicInfo(id: string, info: SourceInfo) {
  const geo = info.georeference!;
  const tiling = geo.tiling[MOSAIC_TMS];
  const [west, south, east, north] = geo.lonLatBounds;
  const mosaic = info.mosaic!;
  return {
    name: id,
    bounds: geo.lonLatBounds,
    center: [(west + east) / 2, (south + north) / 2, tiling.minZoom],
    minzoom: tiling.minZoom,
    maxzoom: tiling.maxZoom,
    ...(mosaic.kind === "mosaic" ? { quadkeys: mosaic.quadkeys } : { items: mosaic.assets }),
    mosaic_tilematrixset: MOSAIC_TMS,
  };
}
