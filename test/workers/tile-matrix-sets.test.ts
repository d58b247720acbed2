// GET /tileMatrixSets and /tileMatrixSets/{id} through the Worker: the OGC JSON web-map clients
// and QGIS read, answered by the edge alone (no admission), for every set of the registry.
import { describe, expect, it } from "vitest";
import { BASE, get, metric } from "./helpers";

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
    expect(ids).toHaveLength(68);
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
});
