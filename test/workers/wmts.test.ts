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

  it("on a set whose CRS is northing first write the corner so, and name the CRS EPSG:{code}, corner x first, with use_epsg=true (titiler's, for ArcMap)", async () => {
    const laea = tileMatrixSet("EuropeanETRS89_LAEAQuad");
    const canada = tileMatrixSet("CanadianNAD83_LCC");
    const source = georeferencedSource("europe");
    // A 2 km square near Munich in LAEA (x first), on zooms 8 to 10; on Canada's LCC too, zooms 1 to 3.
    source.georeference!.tiling = {
      EuropeanETRS89_LAEAQuad: { bounds: [4420000, 2818000, 4432000, 2830000], minZoom: 8, maxZoom: 10, resolution: 25 },
      CanadianNAD83_LCC: { bounds: [0, 0, 50000, 50000], minZoom: 1, maxZoom: 3, resolution: 8000 },
    };
    await cacheSourceInfo(source);
    const { doc } = await capabilities("/tiles/europe/EuropeanETRS89_LAEAQuad/WMTSCapabilities.xml");
    const set = doc.Contents.TileMatrixSet;
    expect(set["ows:SupportedCRS"]).toBe("urn:ogc:def:crs:EPSG::3035");
    expect(set.TileMatrix.map((m: Record<string, string>) => [m["ows:Identifier"], m.TopLeftCorner, m.ScaleDenominator])).toEqual(
      [8, 9, 10].map((z) => [String(z), "5500000 2000000", String(laea.tileMatrices[z].scaleDenominator)]),
    );
    // Over a zoom-8 tile (68.66 m × 256): x 4420000 to 4432000 is columns 137.7 to 138.4, y 2830000 to 2818000 rows 151.9 to 152.6.
    expect(doc.Contents.Layer[0].TileMatrixSetLink.TileMatrixSetLimits.TileMatrixLimits[0]).toEqual({ TileMatrix: "8", MinTileRow: "151", MaxTileRow: "152", MinTileCol: "137", MaxTileCol: "138" });

    // Named EPSG:3035, the corner is read x first (GDAL, ArcMap): written so.
    const laeaEpsg = (await capabilities("/tiles/europe/EuropeanETRS89_LAEAQuad/WMTSCapabilities.xml?use_epsg=true")).doc.Contents.TileMatrixSet;
    expect([laeaEpsg["ows:SupportedCRS"], laeaEpsg.TileMatrix[0].TopLeftCorner]).toEqual(["EPSG:3035", "2000000 5500000"]);

    const epsg = await capabilities("/tiles/europe/CanadianNAD83_LCC/WMTSCapabilities.xml?use_epsg=true&bidx=1");
    const lcc = epsg.doc.Contents.TileMatrixSet;
    expect(lcc["ows:SupportedCRS"]).toBe("EPSG:3978");
    expect(lcc.TileMatrix.map((m: Record<string, string>) => [m.TopLeftCorner, m.MatrixWidth, m.MatrixHeight])).toEqual([
      ["-34655800 39310000", "8", "8"],
      ["-34655800 39310000", "13", "14"],
      ["-34655800 39310000", "21", "22"],
    ]);
    expect(Number(lcc.TileMatrix[0].ScaleDenominator)).toBe(canada.tileMatrices[1].scaleDenominator);
    expect(epsg.doc.ServiceMetadataURL["@xlink:href"]).toBe(`${BASE}/tiles/europe@v1/CanadianNAD83_LCC/WMTSCapabilities.xml?bidx=1&use_epsg=true`);
    expect(epsg.doc.Contents.Layer[0].ResourceURL["@template"]).toBe(`${BASE}/tiles/europe@v1/CanadianNAD83_LCC/{TileMatrix}/{TileCol}/{TileRow}.png?bidx=1`);

    for (const [query, message] of [["use_epsg=yes", "use_epsg"], ["use_epsg=true&use_epsg=true", "use_epsg"]]) {
      const res = await get(`/tiles/europe/CanadianNAD83_LCC/WMTSCapabilities.xml?${query}`);
      expect(res.status, query).toBe(400);
      expect(((await res.json()) as { message: string }).message, query).toContain(message);
    }
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
