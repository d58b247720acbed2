// GET /tileMatrixSets and /tileMatrixSets/{id} through the Worker: the OGC JSON web-map clients
// and QGIS read, answered by the edge alone (no admission).
import { describe, expect, it } from "vitest";
import { BASE, get, metric } from "./helpers";

describe("tile matrix sets", () => {
  it("lists both sets with links to their definitions, cacheable, without admission", async () => {
    const res = await get("/tileMatrixSets");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+/);
    const { tileMatrixSets } = (await res.json()) as { tileMatrixSets: { id: string; uri: string; links: { rel: string; href: string }[] }[] };
    expect(tileMatrixSets.map((t) => t.id)).toEqual(["WebMercatorQuad", "WorldCRS84Quad"]);
    expect(tileMatrixSets[0].uri).toBe("http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad");
    expect(tileMatrixSets[0].links).toEqual([{ rel: "self", type: "application/json", href: `${BASE}/tileMatrixSets/WebMercatorQuad` }]);
    expect(await metric("released_total")).toBe(0);
  });

  it("serves a set's definition, and 404 naming the known ones for another", async () => {
    const res = await get("/tileMatrixSets/WorldCRS84Quad");
    expect(res.status).toBe(200);
    const tms = (await res.json()) as { crs: string; tileMatrices: { id: string; matrixWidth: number }[] };
    expect(tms.crs).toBe("http://www.opengis.net/def/crs/OGC/1.3/CRS84");
    expect(tms.tileMatrices[3]).toMatchObject({ id: "3", matrixWidth: 16 });
    const unknown = await get("/tileMatrixSets/EuropeanETRS89_LAEAQuad");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { message: string }).message).toContain("WebMercatorQuad, WorldCRS84Quad");
  });
});
