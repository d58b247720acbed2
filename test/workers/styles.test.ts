// Stored Raster Style documents through the Worker, the admission DO and a real decoder
// (test/support/workers-global-setup.ts stores them beside the bundled UTM sample): style={name}
// is the same tile as its fields spelled out (one cache entry, one ETag), the query's own fields
// win over the document's, an unknown style is 404 and a broken one 400 naming its field, and a
// TileJSON's template spells the style out.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { get, heartbeat } from "./helpers";

const TILE = "/tiles/utm-quadrants/WebMercatorQuad/12/2219/1427.png";

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("style={name}", () => {
  it("is the tile of its fields spelled out: one entry, one ETag", async () => {
    const styled = await get(`${TILE}?style=red-ramp`);
    expect(styled.status).toBe(200);
    await styled.arrayBuffer(); // the miss is stored as its body is read
    const spelled = await get(`${TILE}?colormap_name=reds&bidx=1`);
    expect(spelled.headers.get("x-tessera-cache")).toBe("hit");
    expect(spelled.headers.get("etag")).toBe(styled.headers.get("etag"));
    expect(styled.headers.get("link")).toContain(`/tiles/utm-quadrants/WebMercatorQuad/12/2219/1427.png?bidx=1&colormap_name=reds>`);
  });

  it("lets the query override a field of the document", async () => {
    const overridden = await get(`${TILE}?style=red-ramp&colormap_name=blues`);
    expect(overridden.status).toBe(200);
    const spelled = await get(`${TILE}?bidx=1&colormap_name=blues`);
    expect(spelled.headers.get("etag")).toBe(overridden.headers.get("etag"));
    expect(overridden.headers.get("etag")).not.toBe((await get(`${TILE}?style=red-ramp`)).headers.get("etag"));
  });

  it("answers 404 for an unknown style and 400 naming the bad field of a broken one", async () => {
    const unknown = await get(`${TILE}?style=nope`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { message: string }).message).toBe('unknown style "nope"');
    const broken = await get(`${TILE}?style=broken`);
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { message: string }).message).toMatch(/^style "broken": rescale\[0\]\[1\]/);
    for (const bad of ["../etc", "a b", "x".repeat(65)]) expect((await get(`${TILE}?style=${encodeURIComponent(bad)}`)).status, bad).toBe(400);
  });

  it("is spelled out in a TileJSON's template", async () => {
    const doc = (await (await get("/tiles/utm-quadrants/WebMercatorQuad/tilejson.json?style=red-ramp")).json()) as { tiles: string[] };
    expect(doc.tiles[0]).toMatch(/\/tiles\/utm-quadrants(@[^/]+)?\/WebMercatorQuad\/\{z\}\/\{x\}\/\{y\}\.png\?bidx=1&colormap_name=reds$/);
  });
});
