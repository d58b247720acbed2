// GET /tiles/{id}/{tileMatrixSetId}/WMTSCapabilities.xml: an OGC WMTS 1.0.0 capabilities
// document with one layer (the source) on one tile matrix set, RESTful only, so that QGIS,
// ArcGIS and GDAL can add the layer. The matrices run from the source's minzoom to maxzoom, each
// with the rows and columns that hold its data. From the cached metadata alone, like info.json.
import type { IRequest } from "itty-router";
import type { TileMatrix, TileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { CONTENT_TYPES, type TileRequest } from "../../shared/maps/tile-request";
import { segment } from "../../shared/path-segment";
import { VERSION_HEADER, type SourceTiling } from "../../shared/protocol";
import { edgeConfig, type Env } from "../env";
import { withStoredStyle } from "../style-document";
import { documentAnswer, documentCacheControl } from "../http-cache";
import type { SourceHandler } from "./follow-version";
import { mapSource } from "./map-source";
import { citedSource, pathId, publicBase, type SourceRef } from "./params";
import { parseTileTemplate, templateQuery, tileUrlTemplate } from "./tile-template";
import { forClient } from "../request-id";
import { cacheControlFor } from "../access/gate";

/**
 * How WMTS names each set: its CRS as an OGC URN (CRS84 is longitude first, as the corner is
 * written) and the well-known scale set clients may match on, where one has the same grid.
 */
const WMTS_SETS: Record<string, { crs: string; wellKnownScaleSet?: string }> = {
  WebMercatorQuad: { crs: "urn:ogc:def:crs:EPSG::3857", wellKnownScaleSet: "urn:ogc:def:wkss:OGC:1.0:GoogleMapsCompatible" },
  WorldCRS84Quad: { crs: "urn:ogc:def:crs:OGC:1.3:CRS84" },
};

export const wmtsHandler: SourceHandler = async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext) => {
  const config = edgeConfig(env);
  const parsed = parseTileTemplate(segment(req.params.tileMatrixSetId, "tile matrix set"), new URL(req.url).searchParams);
  const template = await withStoredStyle(parsed, env, config, ctx, forClient(req));
  const { info, georeference, tiling, restriction } = await mapSource(source, template.tileMatrixSet, req, env, config, ctx);
  const base = publicBase(req, config);
  const cited = citedSource(source, info, config);
  const tms = tileMatrixSet(template.tileMatrixSet);
  const matrices = tms.tileMatrices.slice(tiling.minZoom, tiling.maxZoom + 1);
  const format = CONTENT_TYPES[template.format];
  const [west, south, east, north] = georeference.lonLatBounds;
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<Capabilities xmlns="http://www.opengis.net/wmts/1.0" xmlns:ows="http://www.opengis.net/ows/1.1" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.0.0">
  <ows:ServiceIdentification>
    <ows:Title>Tessera</ows:Title>
    <ows:ServiceType>OGC WMTS</ows:ServiceType>
    <ows:ServiceTypeVersion>1.0.0</ows:ServiceTypeVersion>
  </ows:ServiceIdentification>
  <Contents>
    <Layer>
      <ows:Title>${escape(source.id)}</ows:Title>
      <ows:WGS84BoundingBox crs="urn:ogc:def:crs:OGC:2:84">
        <ows:LowerCorner>${west} ${south}</ows:LowerCorner>
        <ows:UpperCorner>${east} ${north}</ows:UpperCorner>
      </ows:WGS84BoundingBox>
      <ows:Identifier>${escape(source.id)}</ows:Identifier>
      <Style isDefault="true"><ows:Identifier>default</ows:Identifier></Style>
      <Format>${format}</Format>
      <TileMatrixSetLink>
        <TileMatrixSet>${tms.id}</TileMatrixSet>
        <TileMatrixSetLimits>
${matrices.map((m) => matrixLimits(m, tiling)).join("\n")}
        </TileMatrixSetLimits>
      </TileMatrixSetLink>
      <ResourceURL format="${format}" resourceType="tile" template="${escape(tileUrlTemplate(base, cited, template, "{TileMatrix}/{TileCol}/{TileRow}"))}"/>
    </Layer>
    <TileMatrixSet>
      <ows:Identifier>${tms.id}</ows:Identifier>
      <ows:SupportedCRS>${WMTS_SETS[tms.id].crs}</ows:SupportedCRS>
${wellKnownScaleSet(tms, template)}${matrices.map((m) => tileMatrix(m, template.scale)).join("\n")}
    </TileMatrixSet>
  </Contents>
  <ServiceMetadataURL xlink:href="${escape(`${base}/tiles/${pathId(cited)}/${tms.id}/WMTSCapabilities.xml${templateQuery(template)}`)}"/>
</Capabilities>
`;
  return documentAnswer(req, xml, {
    "content-type": "application/xml; charset=utf-8",
    "cache-control": cacheControlFor(documentCacheControl(config, source), restriction),
    [VERSION_HEADER]: info.version,
  });
};

/** A 512 px (@2x) tile covers a 256 px tile's ground: twice the pixels at half the scale denominator. */
function tileMatrix(m: TileMatrix, scale: TileRequest["scale"]): string {
  return `      <TileMatrix>
        <ows:Identifier>${m.id}</ows:Identifier>
        <ScaleDenominator>${m.scaleDenominator / scale}</ScaleDenominator>
        <TopLeftCorner>${m.pointOfOrigin[0]} ${m.pointOfOrigin[1]}</TopLeftCorner>
        <TileWidth>${m.tileWidth * scale}</TileWidth>
        <TileHeight>${m.tileHeight * scale}</TileHeight>
        <MatrixWidth>${m.matrixWidth}</MatrixWidth>
        <MatrixHeight>${m.matrixHeight}</MatrixHeight>
      </TileMatrix>`;
}

/** The well-known scale set only where its scales are the matrices': not for @2x tiles. */
function wellKnownScaleSet(tms: TileMatrixSet, template: TileRequest): string {
  const wkss = WMTS_SETS[tms.id].wellKnownScaleSet;
  return wkss && template.scale === 1 ? `      <WellKnownScaleSet>${wkss}</WellKnownScaleSet>\n` : "";
}

/** The rows and columns of `m` that hold the source's data (a tile that only touches it does not). */
function matrixLimits(m: TileMatrix, tiling: SourceTiling): string {
  const span = m.cellSize * m.tileWidth;
  const [left, top] = m.pointOfOrigin;
  const [minX, minY, maxX, maxY] = tiling.bounds;
  const clamp = (i: number, size: number) => Math.min(Math.max(i, 0), size - 1);
  const cols = [clamp(Math.floor((minX - left) / span), m.matrixWidth), clamp(Math.ceil((maxX - left) / span) - 1, m.matrixWidth)];
  const rows = [clamp(Math.floor((top - maxY) / span), m.matrixHeight), clamp(Math.ceil((top - minY) / span) - 1, m.matrixHeight)];
  return `          <TileMatrixLimits>
            <TileMatrix>${m.id}</TileMatrix>
            <MinTileRow>${rows[0]}</MinTileRow>
            <MaxTileRow>${rows[1]}</MaxTileRow>
            <MinTileCol>${cols[0]}</MinTileCol>
            <MaxTileCol>${cols[1]}</MaxTileCol>
          </TileMatrixLimits>`;
}

const XML_ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => XML_ENTITIES[c]);
