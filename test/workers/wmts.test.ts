// GET /tiles/{id}/{tileMatrixSetId}/WMTSCapabilities.xml through the Worker: an OGC WMTS 1.0.0
// capabilities document, read back with an XML parser as QGIS or ArcGIS would read it.
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { beforeEach, describe, expect, it } from "vitest";
import { tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { BASE, cacheSourceInfo, georeferencedSource, get, heartbeat } from "./helpers";

// Elements that may repeat are always arrays, so a one-zoom set reads like a many-zoom one.
const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@",
  parseTagValue: false,
  isArray: (_, path) =>
    [
      "Capabilities.Contents.Layer",
      "Capabilities.Contents.Layer.TileMatrixSetLink.TileMatrixSetLimits.TileMatrixLimits",
      "Capabilities.Contents.TileMatrixSet.TileMatrix",
    ].includes(String(path)),
});

async function capabilities(path: string) {
  const res = await get(path);
  expect(res.status, path).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/xml; charset=utf-8");
  const text = await res.text();
  expect(XMLValidator.validate(text)).toBe(true);
  return { res, doc: parser.parse(text).Capabilities };
}

beforeEach(async () => {
  expect((await heartbeat()).status).toBe(204);
  await cacheSourceInfo(georeferencedSource("geo"));
});

describe("WMTS capabilities", () => {
  it("describe one layer on WebMercatorQuad: bounds, a RESTful template, the matrices from minzoom to maxzoom with their limits", async () => {
    const { res, doc } = await capabilities("/tiles/geo/WebMercatorQuad/WMTSCapabilities.xml");
    expect(res.headers.get("cache-control")).toBe("public, max-age=60, stale-while-revalidate=3600");
    expect(res.headers.get("etag")).toMatch(/^"[0-9a-f]{32}"$/);
    expect(doc["@version"]).toBe("1.0.0");
    expect(doc["@xmlns"]).toBe("http://www.opengis.net/wmts/1.0");
    expect(doc["ows:ServiceIdentification"]["ows:ServiceType"]).toBe("OGC WMTS");
    const self = `${BASE}/tiles/geo@v1/WebMercatorQuad/WMTSCapabilities.xml`;
    expect(doc.ServiceMetadataURL["@xlink:href"]).toBe(self);

    const [layer] = doc.Contents.Layer;
    expect(layer["ows:Identifier"]).toBe("geo");
    expect(layer["ows:WGS84BoundingBox"]).toEqual({
      "@crs": "urn:ogc:def:crs:OGC:2:84",
      "ows:LowerCorner": "0 0",
      "ows:UpperCorner": "90 66.51326044311186",
    });
    expect(layer.Format).toBe("image/png");
    expect(layer.ResourceURL).toEqual({
      "@format": "image/png",
      "@resourceType": "tile",
      "@template": `${BASE}/tiles/geo@v1/WebMercatorQuad/{TileMatrix}/{TileCol}/{TileRow}.png`,
    });
    expect(layer.TileMatrixSetLink.TileMatrixSet).toBe("WebMercatorQuad");
    // The data is tile 2/2/1, so 2×2 tiles at zoom 3 and 4×4 at zoom 4.
    expect(layer.TileMatrixSetLink.TileMatrixSetLimits.TileMatrixLimits).toEqual([
      { TileMatrix: "2", MinTileRow: "1", MaxTileRow: "1", MinTileCol: "2", MaxTileCol: "2" },
      { TileMatrix: "3", MinTileRow: "2", MaxTileRow: "3", MinTileCol: "4", MaxTileCol: "5" },
      { TileMatrix: "4", MinTileRow: "4", MaxTileRow: "7", MinTileCol: "8", MaxTileCol: "11" },
    ]);

    const set = doc.Contents.TileMatrixSet;
    expect(set["ows:Identifier"]).toBe("WebMercatorQuad");
    expect(set["ows:SupportedCRS"]).toBe("urn:ogc:def:crs:EPSG::3857");
    expect(set.WellKnownScaleSet).toBe("urn:ogc:def:wkss:OGC:1.0:GoogleMapsCompatible");
    const matrices = tileMatrixSet("WebMercatorQuad").tileMatrices;
    expect(set.TileMatrix).toEqual(
      [2, 3, 4].map((z) => ({
        "ows:Identifier": String(z),
        ScaleDenominator: String(matrices[z].scaleDenominator),
        TopLeftCorner: "-20037508.3427892 20037508.3427892",
        TileWidth: "256",
        TileHeight: "256",
        MatrixWidth: String(2 ** z),
        MatrixHeight: String(2 ** z),
      })),
    );
  });

  it("on WorldCRS84Quad name CRS84 with its longitude-first corner, and keep the tile options in the template", async () => {
    const { doc } = await capabilities("/tiles/geo/WorldCRS84Quad/WMTSCapabilities.xml?bidx=1&rescale=0,10&tile_format=jpg&tile_scale=2");
    const [layer] = doc.Contents.Layer;
    expect(layer.Format).toBe("image/jpeg");
    expect(layer.ResourceURL["@template"]).toBe(`${BASE}/tiles/geo@v1/WorldCRS84Quad/{TileMatrix}/{TileCol}/{TileRow}@2x.jpg?bidx=1&rescale=0,10`);
    const set = doc.Contents.TileMatrixSet;
    expect(set["ows:SupportedCRS"]).toBe("urn:ogc:def:crs:OGC:1.3:CRS84");
    expect(set.WellKnownScaleSet).toBeUndefined(); // GoogleCRS84Quad is another grid
    expect(set.TileMatrix.map((m: Record<string, string>) => [m["ows:Identifier"], m.TopLeftCorner, m.MatrixWidth, m.MatrixHeight])).toEqual([
      ["1", "-180 90", "4", "2"],
      ["2", "-180 90", "8", "4"],
      ["3", "-180 90", "16", "8"],
    ]);
    // A @2x tile covers the same ground with twice the pixels: 512 px tiles at half the scale.
    expect(set.TileMatrix[0].TileWidth).toBe("512");
    expect(Number(set.TileMatrix[0].ScaleDenominator)).toBe(tileMatrixSet("WorldCRS84Quad").tileMatrices[1].scaleDenominator / 2);
    expect(doc.ServiceMetadataURL["@xlink:href"]).toBe(
      `${BASE}/tiles/geo@v1/WorldCRS84Quad/WMTSCapabilities.xml?bidx=1&rescale=0,10&tile_format=jpg&tile_scale=2`,
    );
  });

  it("escape an id that XML would read as markup", async () => {
    const id = `a&b<c>"d'e`;
    await cacheSourceInfo({ ...georeferencedSource(id) });
    const { doc } = await capabilities(`/tiles/${encodeURIComponent(id)}/WebMercatorQuad/WMTSCapabilities.xml?bidx=1&rescale=0,10`);
    const [layer] = doc.Contents.Layer;
    expect(layer["ows:Identifier"]).toBe(id);
    expect(layer["ows:Title"]).toBe(id);
    expect(layer.ResourceURL["@template"]).toBe(
      `${BASE}/tiles/${encodeURIComponent(id)}@v1/WebMercatorQuad/{TileMatrix}/{TileCol}/{TileRow}.png?bidx=1&rescale=0,10`,
    );
  });
});
