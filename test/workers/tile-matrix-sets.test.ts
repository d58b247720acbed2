// GET /tileMatrixSets and /tileMatrixSets/{id} through the Worker: the OGC JSON web-map clients
// and QGIS read, answered by the edge alone (no admission), for every set of the registry and an
// operator's own, bundled from the build's edge/tile-matrix-sets.json.
import { describe, expect, it } from "vitest";
import { BASE, cacheSourceInfo, georeferencedSource, get, metric } from "./helpers";

interface Listed {
  id: string;
  uri?: string;
  crs: string;
  links: { rel: string; href: string }[];
}

describe("tile matrix sets", () => {
  it("lists every set of the registry with links to their documents, cacheable, without admission", async () => {
    const res = await get("/tileMatrixSets");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+/);
    const { tileMatrixSets } = (await res.json()) as { tileMatrixSets: Listed[] };
    const ids = tileMatrixSets.map((t) => t.id);
    expect(ids.slice(0, 3)).toEqual(["WebMercatorQuad", "WorldCRS84Quad", "WorldMercatorWGS84Quad"]);
    for (const id of ["UTM01WGS84Quad", "UTM60WGS84Quad", "UPSArcticWGS84Quad", "UPSAntarcticWGS84Quad", "EuropeanETRS89_LAEAQuad", "CanadianNAD83_LCC", "NZTM2000Quad"]) {
      expect(ids, id).toContain(id);
    }
    // The registry's 68, then the operator's one (vitest.config.ts gives the build this project's file).
    expect(ids).toHaveLength(69);
    expect(ids[68]).toBe("OperatorLAEA");
    expect(tileMatrixSets[0].uri).toBe("http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad");
    expect(tileMatrixSets[0].crs).toBe("http://www.opengis.net/def/crs/EPSG/0/3857");
    expect(tileMatrixSets[0].links).toEqual([{ rel: "self", type: "application/json", href: `${BASE}/tileMatrixSets/WebMercatorQuad` }]);
    expect(await metric("released_total")).toBe(0);
  });

  it("serves a set's document as the standard writes it, and 404 for another", async () => {
    const res = await get("/tileMatrixSets/WorldCRS84Quad");
    expect(res.status).toBe(200);
    const tms = (await res.json()) as { crs: string; tileMatrices: { id: string; matrixWidth: number }[] };
    expect(tms.crs).toBe("http://www.opengis.net/def/crs/OGC/1.3/CRS84");
    expect(tms.tileMatrices[3]).toMatchObject({ id: "3", matrixWidth: 16 });
    // EPSG:3035 is northing first: the document keeps the standard's order.
    const laea = (await (await get("/tileMatrixSets/EuropeanETRS89_LAEAQuad")).json()) as { orderedAxes: string[]; tileMatrices: { pointOfOrigin: number[] }[] };
    expect([laea.orderedAxes, laea.tileMatrices[0].pointOfOrigin]).toEqual([["Y", "X"], [5500000, 2000000]]);
    const canada = (await (await get("/tileMatrixSets/CanadianNAD83_LCC")).json()) as { tileMatrices: { matrixWidth: number; matrixHeight: number }[] };
    expect(canada.tileMatrices.slice(0, 3).map((m) => [m.matrixWidth, m.matrixHeight])).toEqual([[5, 5], [8, 8], [13, 14]]);
    const unknown = await get("/tileMatrixSets/GoogleMapsCompatible");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { message: string }).message).toContain('unknown tile matrix set "GoogleMapsCompatible"');
  });

  it("serves an operator's set from the build's file, and its maps: TileJSON and WMTS with the corner northing first", async () => {
    const doc = (await (await get("/tileMatrixSets/OperatorLAEA")).json()) as { id: string; tileMatrices: unknown[] };
    expect([doc.id, doc.tileMatrices.length]).toEqual(["OperatorLAEA", 2]);
    const source = georeferencedSource("operator-map");
    source.georeference!.tiling = { OperatorLAEA: { bounds: [4400000, 2800000, 4460000, 2860000], minZoom: 0, maxZoom: 1, resolution: 400 } };
    await cacheSourceInfo(source);
    const tileJson = (await (await get("/tiles/operator-map/OperatorLAEA/tilejson.json")).json()) as { tiles: string[]; maxzoom: number };
    expect([tileJson.tiles[0], tileJson.maxzoom]).toEqual([`${BASE}/tiles/operator-map@v1/OperatorLAEA/{z}/{x}/{y}.png`, 1]);
    const xml = await (await get("/tiles/operator-map/OperatorLAEA/WMTSCapabilities.xml")).text();
    expect(xml).toContain("<ows:SupportedCRS>urn:ogc:def:crs:EPSG::3035</ows:SupportedCRS>");
    expect(xml).toContain("<TopLeftCorner>5500000 2000000</TopLeftCorner>");
    expect((await get("/tiles/operator-map/OperatorLAEA/2/0/0.png")).status).toBe(400); // past its last zoom
  });
});
