// An OGC WMTS 1.0.0 capabilities document with one layer (a source) on one tile matrix set,
// RESTful only, so that QGIS, ArcGIS and GDAL can add the layer. The matrices run from the
// source's minzoom to maxzoom, each with the rows and columns that hold its data. WMTS writes a
// matrix's top-left corner in its CRS's axis order (northing first for EPSG:3035 and EPSG:2193),
// so the set's x-first origin is turned back here, unless the CRS is named `EPSG:{code}`
// (titiler's use_epsg, for ArcMap), which clients read x first. Pure text, from the source's
// metadata alone.
import type { SourceTiling } from "../protocol";
import { tilesCovering, type TileMatrix, type TileMatrixSet } from "./tile-matrix-sets";

export interface WmtsLayer {
  /** The source's id: the layer's title and identifier. */
  id: string;
  /** [west, south, east, north] in degrees. */
  lonLatBounds: readonly number[];
  tiling: SourceTiling;
  tms: TileMatrixSet;
  /** The tiles' media type. */
  format: string;
  /** 2 for @2x tiles: 512 px at half the scale denominator. */
  scale: 1 | 2;
  /** The tiles' URL with {TileMatrix}, {TileCol} and {TileRow}. */
  template: string;
  /** Where this document is. */
  self: string;
  /**
   * SupportedCRS as `EPSG:{code}` rather than an OGC URN: titiler's `use_epsg`, which ArcMap
   * needs to match the layer's CRS.
   */
  epsgNames: boolean;
}

/** The URN WMTS names the set's CRS by: CRS84 for CRS84 sets, else its EPSG code's. */
function supportedCrs(tms: TileMatrixSet, epsgNames: boolean): string {
  if (epsgNames) return tms.crsName;
  if (/CRS84$/i.test(tms.crs)) return "urn:ogc:def:crs:OGC:1.3:CRS84";
  return `urn:ogc:def:crs:EPSG::${tms.crsName.slice("EPSG:".length)}`;
}

export function wmtsCapabilities(layer: WmtsLayer): string {
  const { tms, tiling, format } = layer;
  const matrices = tms.tileMatrices.filter((m) => m.zoom >= tiling.minZoom && m.zoom <= tiling.maxZoom);
  // WMTS has no box across 180°: such a layer spans every longitude (and every column below),
  // its tiles away from the data the edge's empty ones.
  const across = tiling.bounds[2] > tms.extent[2];
  const [west, south, east, north] = across ? [-180, layer.lonLatBounds[1], 180, layer.lonLatBounds[3]] : layer.lonLatBounds;
  return `<?xml version="1.0" encoding="UTF-8"?>
<Capabilities xmlns="http://www.opengis.net/wmts/1.0" xmlns:ows="http://www.opengis.net/ows/1.1" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.0.0">
  <ows:ServiceIdentification>
    <ows:Title>Tessera</ows:Title>
    <ows:ServiceType>OGC WMTS</ows:ServiceType>
    <ows:ServiceTypeVersion>1.0.0</ows:ServiceTypeVersion>
  </ows:ServiceIdentification>
  <Contents>
    <Layer>
      <ows:Title>${escape(layer.id)}</ows:Title>
      <ows:WGS84BoundingBox crs="urn:ogc:def:crs:OGC:2:84">
        <ows:LowerCorner>${west} ${south}</ows:LowerCorner>
        <ows:UpperCorner>${east} ${north}</ows:UpperCorner>
      </ows:WGS84BoundingBox>
      <ows:Identifier>${escape(layer.id)}</ows:Identifier>
      <Style isDefault="true"><ows:Identifier>default</ows:Identifier></Style>
      <Format>${format}</Format>
      <TileMatrixSetLink>
        <TileMatrixSet>${tms.id}</TileMatrixSet>
        <TileMatrixSetLimits>
${matrices.map((m) => matrixLimits(m, across ? [tms.extent[0], tiling.bounds[1], tms.extent[2], tiling.bounds[3]] : tiling.bounds)).join("\n")}
        </TileMatrixSetLimits>
      </TileMatrixSetLink>
      <ResourceURL format="${format}" resourceType="tile" template="${escape(layer.template)}"/>
    </Layer>
    <TileMatrixSet>
      <ows:Identifier>${tms.id}</ows:Identifier>
      <ows:SupportedCRS>${supportedCrs(tms, layer.epsgNames)}</ows:SupportedCRS>
${wellKnownScaleSet(tms, layer.scale)}${matrices.map((m) => tileMatrix(m, tms.northingFirst && !layer.epsgNames, layer.scale)).join("\n")}
    </TileMatrixSet>
  </Contents>
  <ServiceMetadataURL xlink:href="${escape(layer.self)}"/>
</Capabilities>
`;
}

/**
 * A 512 px (@2x) tile covers a 256 px tile's ground: twice the pixels at half the scale
 * denominator. The corner is northing first where the CRS's URN says so; an `EPSG:{code}` name
 * is read x first (GDAL, ArcMap), so it gets the corner x first.
 */
function tileMatrix(m: TileMatrix, northingFirst: boolean, scale: 1 | 2): string {
  const [x, y] = m.origin;
  return `      <TileMatrix>
        <ows:Identifier>${m.zoom}</ows:Identifier>
        <ScaleDenominator>${m.scaleDenominator / scale}</ScaleDenominator>
        <TopLeftCorner>${northingFirst ? `${y} ${x}` : `${x} ${y}`}</TopLeftCorner>
        <TileWidth>${m.tileWidth * scale}</TileWidth>
        <TileHeight>${m.tileHeight * scale}</TileHeight>
        <MatrixWidth>${m.matrixWidth}</MatrixWidth>
        <MatrixHeight>${m.matrixHeight}</MatrixHeight>
      </TileMatrix>`;
}

/**
 * WMTS's one well-known scale set a registry set has the grid of (GoogleCRS84Quad is another
 * grid than WorldCRS84Quad's), and only where its scales are the matrices': not for @2x tiles.
 */
function wellKnownScaleSet(tms: TileMatrixSet, scale: 1 | 2): string {
  const google = tms.document.wellKnownScaleSet === "http://www.opengis.net/def/wkss/OGC/1.0/GoogleMapsCompatible";
  return google && scale === 1 ? "      <WellKnownScaleSet>urn:ogc:def:wkss:OGC:1.0:GoogleMapsCompatible</WellKnownScaleSet>\n" : "";
}

/** The rows and columns of `m` that hold `bounds` (a tile that only touches them does not). */
function matrixLimits(m: TileMatrix, bounds: readonly number[]): string {
  const { cols, rows } = tilesCovering(m, bounds);
  return `          <TileMatrixLimits>
            <TileMatrix>${m.zoom}</TileMatrix>
            <MinTileRow>${rows[0]}</MinTileRow>
            <MaxTileRow>${rows[1]}</MaxTileRow>
            <MinTileCol>${cols[0]}</MinTileCol>
            <MaxTileCol>${cols[1]}</MaxTileCol>
          </TileMatrixLimits>`;
}

const XML_ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => XML_ENTITIES[c]);
