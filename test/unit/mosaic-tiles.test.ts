// Mosaic tiles on the decoder, on GDAL-made fixtures whose pixels are known functions: every
// pixel-selection mode, stage, rank_channel, the tuple rule and tie-breaks, checked pixel by pixel
// against values this test computes on its own from the fixtures (which assets a tile pixel
// reads, which are valid there, which wins); the index's order at a coarser zoom; expressions on
// a STAC item's bands; the asset limit; `first` reading no further asset once every pixel is
// filled; members' tile tables read as their tiles need them (no prefetch);
// invalidate_source(mosaic, member); web assets under the access policy; and a restricted
// source's file named as a member.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DecodedBlockCache } from "../../regional/cog/block-cache";
import { Cog } from "../../regional/cog/cog";
import { warpTile } from "../../regional/maps/warp";
import { readAssetConfig } from "../../regional/source/access-policy";
import { AssetSources } from "../../regional/source/assets";
import { LocalCatalog } from "../../regional/source/local";
import { tileToQuadkey } from "../../shared/maps/mosaic-json";
import { WORLD_EDGE_FIXTURES, worldEdgeFixtures } from "../support/world-edge-fixtures";
import { tileAt, tileBounds, tileMatrix, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { conversion, setCrs } from "../../regional/maps/crs";
import { parseTileRequest } from "../../shared/maps/tile-request";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { startAssetServer, type AssetServer } from "../support/asset-server";
import { GDAL_PYTHON } from "../support/gdal-reference";
import {
  gridPixel,
  MONO_MOSAIC_TILES,
  MOSAIC_FIXTURES,
  MOSAIC_PARENT,
  MOSAIC_Z,
  mosaicFixtures,
  RGB_MOSAIC_TILES,
  type MosaicFixture,
} from "../support/mosaic-fixtures";
import { RecordingCatalog, refusalLog, SAMPLES, signedGet, signedPost, signedPostBody, startDecoder, type Decoder } from "./regional-helpers";

const Z = MOSAIC_Z;
const [P, Q] = [2 * MOSAIC_PARENT.x, 2 * MOSAIC_PARENT.y];
const { monoA, monoB, monoC } = MOSAIC_FIXTURES;
const BY_KEY = new Map<string, MosaicFixture>(Object.values(MOSAIC_FIXTURES).map((f) => [f.key, f]));

let dir: string;
let catalog: RecordingCatalog;
let decoder: Decoder;

beforeAll(async () => {
  dir = mosaicFixtures();
  catalog = new RecordingCatalog(new LocalCatalog(dir));
  // No decoded-block cache: every tile reads its blocks, so the bytes read show which assets a tile read.
  decoder = await startDecoder(catalog, 3, { blockCache: new DecodedBlockCache(0), mosaicMaxAssets: 3 });
}, 120_000);
afterAll(() => decoder?.close());

interface Tile {
  status: number;
  width: number;
  channels: number;
  data: Buffer;
  /** The answer's x-request-id, which the decoder's log lines about it carry. */
  requestId: string | null;
}

async function tile(d: Decoder, id: string, [z, x, y]: number[], query = "", set = "WebMercatorQuad"): Promise<Tile> {
  const res = await signedGet(d, `/v1/tiles/${id}/${set}/${z}/${x}/${y}.png${query ? `?${query}` : ""}`);
  const requestId = res.headers.get("x-request-id");
  if (res.status !== 200) return { status: res.status, width: 0, channels: 0, data: Buffer.from(await res.text()), requestId };
  // With alpha always: a tile opaque everywhere comes without it.
  const { data, info } = await sharp(Buffer.from(await res.arrayBuffer())).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { status: 200, width: info.width, channels: info.channels, data, requestId };
}

/** A tile pixel's sample per asset the index lists there, in paint order; undefined where the asset is not valid (any band). */
function samples(tiles: Record<string, string[]>, [z, x, y]: number[], px: number, py: number, bands: number[]): (number[] | undefined)[] {
  return tiles[tileToQuadkey(Z, x >> (z - Z), y >> (z - Z))].map((key) => {
    const f = BY_KEY.get(key)!;
    const at = gridPixel(f, z, x, y, px, py);
    if (!at || !bands.every((b) => f.valid(at[0], at[1], b))) return undefined;
    return bands.map((b) => f.value(at[0], at[1], b));
  });
}

/** Every `step`-th pixel of a 256² tile, and its offset in a tile of `channels`. */
function* pixels(channels: number, step = 3): Generator<[number, number, number]> {
  for (let py = 0; py < 256; py += step) for (let px = 0; px < 256; px += step) yield [px, py, (py * 256 + px) * channels];
}

/** Checks a tile against `expected` per pixel (undefined: transparent), within `tolerance` levels. */
function expectPixels(t: Tile, expected: (px: number, py: number) => number[] | undefined, tolerance = 0): void {
  expect(t.status, t.data.toString().slice(0, 200)).toBe(200);
  let checked = 0;
  for (const [px, py, at] of pixels(t.channels)) {
    const want = expected(px, py);
    const alpha = t.data[at + t.channels - 1];
    if (want === undefined) {
      expect(alpha, `(${px}, ${py}) transparent`).toBe(0);
      continue;
    }
    expect(alpha, `(${px}, ${py}) opaque`).toBe(255);
    const got = [...t.data.subarray(at, at + want.length)];
    for (let c = 0; c < want.length; c++) expect(Math.abs(got[c] - want[c]), `(${px}, ${py}) channel ${c}: ${got} vs ${want}`).toBeLessThanOrEqual(tolerance);
    checked++;
  }
  expect(checked).toBeGreaterThan(1000);
}

const clip = (v: number) => Math.max(0, Math.min(255, Math.round(v)));

/**
 * Runs `test` on a scratch data directory holding copies of fixture files (name there → fixture
 * file), then removes it.
 */
async function inScratch(copies: Record<string, string>, test: (dir: string) => Promise<void>): Promise<void> {
  const scratch = mkdtempSync(path.join(tmpdir(), "tessera-mosaic-"));
  try {
    for (const [name, file] of Object.entries(copies)) cpSync(path.join(dir, file), path.join(scratch, name));
    await test(scratch);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** `{name}.mosaic.json` in `folder`: one quadkey, tile z/x/y's, listing `assets`, served at zoom z only. */
function writeMosaic(folder: string, name: string, [z, x, y]: number[], assets: string[]): void {
  const doc = { mosaicjson: "0.0.3", minzoom: z, maxzoom: z, bounds: [16, 48, 17, 49], tiles: { [tileToQuadkey(z, x, y)]: assets } };
  writeFileSync(path.join(folder, `${name}.mosaic.json`), JSON.stringify(doc));
}

// The reductions, written here again from their definitions (population deviation; an even
// count's median the mean of the middle two), over the valid assets in paint order.
const REDUCE: Record<string, (values: number[]) => number> = {
  first: (v) => v[0],
  highest: (v) => Math.max(...v),
  lowest: (v) => Math.min(...v),
  mean: (v) => v.reduce((a, b) => a + b, 0) / v.length,
  median: (v) => {
    const s = [...v].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  },
  stdev: (v) => {
    const mean = v.reduce((a, b) => a + b, 0) / v.length;
    return Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / v.length);
  },
};

describe("MosaicJSON: one band, three assets overlapping", () => {
  // Tile q2 (P, Q+1) lists c, a, b, each with its own invalid pixels there.
  const q2 = [Z, P, Q + 1];

  for (const mode of Object.keys(REDUCE)) {
    it(`pixel_selection=${mode} over the assets valid at each pixel`, async () => {
      const t = await tile(decoder, "mono-mosaic", q2, mode === "first" ? "" : `pixel_selection=${mode}`);
      expectPixels(
        t,
        (px, py) => {
          const valid = samples(MONO_MOSAIC_TILES, q2, px, py, [0]).flatMap((s) => (s ? [s[0]] : []));
          return valid.length ? [clip(REDUCE[mode](valid))] : undefined;
        },
        mode === "first" || mode === "highest" || mode === "lowest" ? 0 : 1, // float32 sums round either way at .5
      );
    });
  }

  it("pixel_selection=count: how many assets are valid, 0 included, everywhere opaque", async () => {
    const t = await tile(decoder, "mono-mosaic", q2, "pixel_selection=count");
    expectPixels(t, (px, py) => [samples(MONO_MOSAIC_TILES, q2, px, py, [0]).filter(Boolean).length]);
  });

  it("paints a coarser tile from its quadkeys' lists in lexical order, each asset once (b, a, c at the parent)", async () => {
    const parent = [MOSAIC_PARENT.z, MOSAIC_PARENT.x, MOSAIC_PARENT.y];
    const mosaic = await tile(decoder, "mono-mosaic", parent);
    // Each member alone at the same tile (a single COG's tile, tested against GDAL elsewhere),
    // laid first-valid in the order b, a, c: what the mosaic's `first` must be.
    const alone = await Promise.all([monoB, monoA, monoC].map((f) => tile(decoder, f.id, parent)));
    const grey = (t: Tile, px: number, py: number) => {
      const at = (py * 256 + px) * t.channels;
      return t.data[at + t.channels - 1] === 255 ? t.data[at] : undefined;
    };
    expectPixels(mosaic, (px, py) => {
      const hit = alone.map((t) => grey(t, px, py)).find((v) => v !== undefined);
      return hit === undefined ? undefined : [hit];
    });
    // Another order would differ where two are valid: the order is observable here.
    let differs = 0;
    for (const [px, py] of pixels(1, 1)) {
      const [b, a, c] = alone.map((t) => grey(t, px, py));
      if ((a !== undefined && b !== undefined && a !== b) || (a !== undefined && c !== undefined && a !== c)) differs++;
    }
    expect(differs).toBeGreaterThan(100);
  });

  it("refuses 413 a tile that would paint more assets than the configured most (3 here), naming the count", async () => {
    await inScratch({}, async (scratch) => {
      writeMosaic(scratch, "many", [Z, P, Q + 1], ["a.tif", "b.tif", "c.tif", "d.tif"]);
      const d = await startDecoder(new LocalCatalog(scratch), 3, { mosaicMaxAssets: 3 });
      try {
        const t = await tile(d, "many", [Z, P, Q + 1]);
        expect(t.status).toBe(413);
        expect(JSON.parse(t.data.toString()).message).toBe(`tile WebMercatorQuad/${Z}/${P}/${Q + 1}.png of mosaic "many" paints 4 assets, more than the 3 a request may`);
      } finally {
        await d.close();
      }
    });
  });

  it("answers a tile inside the bounds where the index lists nothing with the transparent tile", async () => {
    const t = await tile(decoder, "mono-mosaic", [Z, P + 2, Q + 2]);
    expect(t.status).toBe(200);
    expect([...new Set(t.data.filter((_, i) => i % t.channels === t.channels - 1))]).toEqual([0]);
  });
});

describe("MosaicJSON: three bands, the tuple rule", () => {
  // Tile (P+1, Q) lists rgb-b, then rgb-a: b wins ties.
  const both = [Z, P + 1, Q];
  const sample = (px: number, py: number) => samples(RGB_MOSAIC_TILES, both, px, py, [0, 1, 2]);

  it("highest on rank_channel 2 keeps the winner's whole tuple; an asset with any band nodata takes no part; ties go to the earlier", async () => {
    const t = await tile(decoder, "rgb-mosaic", both, "pixel_selection=highest&rank_channel=2");
    let ties = 0;
    expectPixels(t, (px, py) => {
      const [b, a] = sample(px, py);
      if (a && b && a[1] === b[1]) ties++;
      if (!a || !b) return a ?? b;
      return a[1] > b[1] ? a : b;
    });
    expect(ties).toBeGreaterThan(0);
  });

  it("lowest on rank_channel 3, and mean per component", async () => {
    expectPixels(await tile(decoder, "rgb-mosaic", both, "pixel_selection=lowest&rank_channel=3"), (px, py) => {
      const [b, a] = sample(px, py);
      return !a || !b ? (a ?? b) : a[2] < b[2] ? a : b;
    });
    expectPixels(
      await tile(decoder, "rgb-mosaic", both, "pixel_selection=mean"),
      (px, py) => {
        const valid = sample(px, py).filter((s): s is number[] => !!s);
        return valid.length ? [0, 1, 2].map((c) => clip(REDUCE.mean(valid.map((v) => v[c])))) : undefined;
      },
      1,
    );
  });

  it("stage: before channels ranks the source bands by band number, after channels the evaluated channels", async () => {
    // The expression swaps R and B: rank_channel 1 is R before channels, and B after.
    const query = "pixel_selection=highest&rank_channel=1&expression=b3;b2;b1";
    const winner = (px: number, py: number, component: number) => {
      const [b, a] = sample(px, py);
      const w = !a || !b ? (a ?? b) : a[component] > b[component] ? a : b;
      return w && [w[2], w[1], w[0]];
    };
    expectPixels(await tile(decoder, "rgb-mosaic", both, `${query}&stage=before_channels`), (px, py) => winner(px, py, 0));
    expectPixels(await tile(decoder, "rgb-mosaic", both, `${query}&stage=after_channels`), (px, py) => winner(px, py, 2));
  });

  it("lastbandhigh decides on the last channel and drops it", async () => {
    // Four channels, the last G: the asset with the higher G wins, and shows R, G, B.
    const t = await tile(decoder, "rgb-mosaic", both, "pixel_selection=lastbandhigh&expression=b1;b2;b3;b2");
    expectPixels(t, (px, py) => {
      const [b, a] = sample(px, py);
      return !a || !b ? (a ?? b) : a[1] > b[1] ? a : b;
    });
  });
});

describe("first reads no further asset once every pixel is filled", () => {
  it("stops before the second asset where the first covers the tile, and reads it when the mode needs it", async () => {
    await inScratch({ [monoB.key]: monoB.key, [monoC.key]: monoC.key }, async (dir2) => {
      // mono-c covers tile (P+1, Q+1) whole, its masked disc elsewhere; mono-b lies there too.
      writeMosaic(dir2, "cb", [Z, P + 1, Q + 1], ["mono-c.tif", "mono-b.tif"]);
      const recording = new RecordingCatalog(new LocalCatalog(dir2));
      const d = await startDecoder(recording, 3, { blockCache: new DecodedBlockCache(0) });
      try {
        const at = [Z, P + 1, Q + 1];
        expect((await tile(d, "cb", at, "pixel_selection=highest")).status).toBe(200); // opens both
        const readOf = (id: string) => recording.reads.filter((r) => r.id === id).reduce((n, r) => n + r.length, 0);
        const before = readOf("mono-b.tif");
        const first = await tile(d, "cb", at);
        expectPixels(first, (px, py) => {
          const c = gridPixel(monoC, Z, P + 1, Q + 1, px, py)!;
          return [monoC.value(c[0], c[1], 0)];
        });
        expect(readOf("mono-b.tif")).toBe(before);
        expect((await tile(d, "cb", at, "pixel_selection=highest")).status).toBe(200);
        expect(readOf("mono-b.tif")).toBeGreaterThan(before);
      } finally {
        await d.close();
      }
    });
  });
});

/** Tile (Z, P, Q)'s ancestor eight zooms up: the tile a 65536-pixel member aligned on it fills. */
const WIDE = { z: Z - 8, x: P >> 8, y: Q >> 8 };

/**
 * A sparse tiled GeoTIFF in `folder`, 65536² at zoom Z's resolution, filling tile WIDE, with one
 * 256² overview of value 7 (the tile WIDE reads) and a full level of nothing stored: that level's
 * tile tables hold 65,536 entries each, 512 KiB in all, which only a prefetch would read.
 */
function writeWideMember(folder: string, name: string): void {
  const grid = tileMatrixSet("WebMercatorQuad").tileMatrices[Z];
  const span = grid.cellSize * grid.tileWidth * 256;
  const [x0, y0] = [grid.origin[0] + WIDE.x * span, grid.origin[1] - WIDE.y * span];
  const script = `
from osgeo import gdal, osr
ds = gdal.GetDriverByName("GTiff").Create(${JSON.stringify(path.join(folder, name))}, 65536, 65536, 1, gdal.GDT_Byte, ["TILED=YES", "SPARSE_OK=TRUE", "COMPRESS=DEFLATE"])
ds.SetGeoTransform([${x0}, ${grid.cellSize}, 0, ${y0}, 0, -${grid.cellSize}])
srs = osr.SpatialReference(); srs.ImportFromEPSG(3857); ds.SetProjection(srs.ExportToWkt())
ds.GetRasterBand(1).SetNoDataValue(0)
ds.BuildOverviews("NONE", [256])
ds.GetRasterBand(1).GetOverview(0).WriteRaster(0, 0, 256, 256, bytes([7]) * 65536)
ds = None`;
  execFileSync(GDAL_PYTHON, ["-c", script]);
}

describe("a mosaic member's tile tables are read as its tiles need them", () => {
  it("not prefetched, as a source's are: a tile of its overview never reads the full level's 512 KiB of tables", async () => {
    await inScratch({}, async (dir2) => {
      writeWideMember(dir2, "wide.tif");
      writeMosaic(dir2, "wide-mosaic", [WIDE.z, WIDE.x, WIDE.y], ["wide.tif"]);
      const recording = new RecordingCatalog(new LocalCatalog(dir2));
      const d = await startDecoder(recording, 3, { blockCache: new DecodedBlockCache(0) });
      try {
        const readOf = (id: string) => recording.reads.filter((r) => r.id === id).reduce((n, r) => n + r.length, 0);
        expectPixels(await tile(d, "wide-mosaic", [WIDE.z, WIDE.x, WIDE.y]), () => [7, 7, 7]);
        // The same file as a source of its own prefetches every level's tables in the background.
        expect((await signedGet(d, `/v1/tiles/wide/WebMercatorQuad/${WIDE.z}/${WIDE.x}/${WIDE.y}.png`)).status).toBe(200);
        await expect.poll(() => readOf("wide"), { timeout: 5000 }).toBeGreaterThan(512 * 1024);
        // The member's header blocks and its overview's tables: some 130 KiB, as a one-block
        // header ring reads the first block again after the IFD at the file's end.
        expect(readOf("wide.tif")).toBeLessThan(256 * 1024);
      } finally {
        await d.close();
      }
    });
  });
});

describe("invalidate_source(mosaic, member)", () => {
  it("keeps a member at its snapshot until invalidated, then opens the fresh one", async () => {
    await inScratch({ [monoC.key]: monoC.key }, async (dir2) => {
      writeMosaic(dir2, "c", [Z, P + 1, Q + 1], ["mono-c.tif"]);
      const d = await startDecoder(new LocalCatalog(dir2));
      try {
        const at = [Z, P + 1, Q + 1];
        const value = async () => (await tile(d, "c", at)).data[0];
        expect(await value()).toBe(monoC.value(256, 0, 0));
        // A publisher replaces the member (write, then rename over it): a new version.
        execFileSync("gdal_translate", ["-q", "-of", "COG", "-scale", "0", "255", "255", "0", path.join(dir2, monoC.key), path.join(dir2, "new.tif")]);
        renameSync(path.join(dir2, "new.tif"), path.join(dir2, monoC.key));
        expect(await value()).toBe(monoC.value(256, 0, 0)); // still the pinned snapshot
        const res = await signedPost(d, DECODER.invalidate("c", "mono-c.tif"));
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ id: "c", member: "mono-c.tif", dropped: 1 });
        expect(await value()).toBe(255 - monoC.value(256, 0, 0));
      } finally {
        await d.close();
      }
    });
  });
});

describe("STAC: one COG a band", () => {
  // Inside the first scene (16.35°–16.48° E, 48.16°–48.25° N), over the second's west part.
  const SCENE_TILE = [12, 2234, 1420];
  const rawTile = async (key: string, at: number[]) => {
    const cog = await Cog.open(await new LocalCatalog(dir).openKey(key));
    try {
      return await warpTile(cog, parseTileRequest({ tileMatrixSet: "WebMercatorQuad", z: String(at[0]), x: String(at[1]), y: `${at[2]}.png` }, new URLSearchParams()));
    } finally {
      await cog.close();
    }
  };

  it("evaluates (B08-B04)/(B08+B04) on each band warped alone, invalid where B08 is nodata", async () => {
    // A zoom-12 tile inside the scene, with B08's nodata square in it.
    const at = SCENE_TILE;
    const [b08, b04] = await Promise.all([rawTile("scene-B08.tif", at), rawTile("scene-B04.tif", at)]);
    const t = await tile(decoder, "scene", at, `expression=${encodeURIComponent("(B08-B04)/(B08+B04)")}&rescale=-1,1`);
    let invalid = 0;
    expectPixels(
      t,
      (px, py) => {
        const i = py * 256 + px;
        if (!b08.valid[0][i] || !b04.valid[0][i]) return (invalid++, undefined);
        const [n, r] = [b08.bands[0][i], b04.bands[0][i]];
        return [clip((((n - r) / (n + r)) + 1) * 127.5)];
      },
      1,
    );
    expect(invalid).toBeGreaterThan(10); // B08's 1 km nodata square, some 26 px across here
  });

  it("renders assets=B04,B03,B02 as RGB, each channel the band's own tile", async () => {
    const at = SCENE_TILE;
    const bands = await Promise.all(["scene-B04.tif", "scene-B03.tif", "scene-B02.tif"].map((k) => rawTile(k, at)));
    const t = await tile(decoder, "scene", at, "assets=B04,B03,B02&rescale=0,2000");
    expectPixels(t, (px, py) => {
      const i = py * 256 + px;
      return bands.every((b) => b.valid[0][i]) ? bands.map((b) => clip((b.bands[0][i] * 255) / 2000)) : undefined;
    }, 1);
  });

  it("describes its first item's COG assets by key, each as its own COG's metadata says, for /info", async () => {
    const info = (await (await signedGet(decoder, DECODER.info("scene"))).json()) as SourceInfo;
    const cog = (await (await signedGet(decoder, DECODER.info("scene-B08"))).json()) as SourceInfo;
    const described = info.mosaic!.stacAssets!;
    expect(Object.keys(described)).toEqual(["B02", "B03", "B04", "B08"]);
    expect(described.B08).toEqual({ levels: cog.levels, bands: cog.bands, nodataType: cog.nodataType, georeference: { crs: "EPSG:32633", bbox: cog.georeference!.bbox, tiling: cog.georeference!.tiling } });
    expect(described.B08.bands![0]).toMatchObject({ dtype: "uint16", nodata: 0 });
  });

  it("crops and sums an item's asset as the asset's own COG: a box, a preview, a feature's statistics", async () => {
    // In the scene's own CRS (its COGs' UTM), so the item's box is laid out on the asset's grid.
    const box = "16.36,48.17,16.46,48.24/120x90.png?dst_crs=EPSG:32633&rescale=0,2000";
    const [fromItem, fromCog] = await Promise.all([signedGet(decoder, `/v1/areas/scene/bbox/${box}&assets=B04`), signedGet(decoder, `/v1/areas/scene-B04/bbox/${box}`)]);
    expect(fromItem.status, await fromItem.clone().text()).toBe(200);
    const [a, b] = await Promise.all([fromItem.arrayBuffer(), fromCog.arrayBuffer()]);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
    const preview = await signedGet(decoder, "/v1/areas/scene/preview.png?assets=B04,B03,B02&rescale=0,2000&max_size=64");
    expect(preview.status, await preview.clone().text()).toBe(200);
    const { width, height } = await sharp(Buffer.from(await preview.arrayBuffer())).metadata();
    expect(Math.max(width!, height!)).toBe(64);
    const field = JSON.stringify({ type: "Feature", properties: null, geometry: { type: "Polygon", coordinates: [[[16.37, 48.18], [16.45, 48.18], [16.45, 48.23], [16.37, 48.18]]] } });
    const stats = async (path: string) => (await (await signedPostBody(decoder, path, field)).json()) as { properties: { statistics: Record<string, { min: number; max: number; count: number; mean: number }> } };
    // At one max_size: a mosaic's own resolution is its maxzoom's, finer than the COG's here.
    const [item, cog] = await Promise.all([stats("/v1/statistics/scene?assets=B04&dst_crs=EPSG:32633&max_size=200"), stats("/v1/statistics/scene-B04?dst_crs=EPSG:32633&max_size=200")]);
    const [ofItem, ofCog] = [item.properties.statistics.B04, cog.properties.statistics.b1];
    expect(ofItem.count).toBeGreaterThan(1000);
    expect([ofItem.min, ofItem.max, ofItem.count, ofItem.mean]).toEqual([ofCog.min, ofCog.max, ofCog.count, ofCog.mean]);
  });

  it("paints an ItemCollection's items in order: highest takes the second scene where both lie", async () => {
    const at = SCENE_TILE;
    const [one, two] = await Promise.all([rawTile("scene-B02.tif", at), rawTile("scene-2/B02.tif", at)]);
    const t = await tile(decoder, "scenes", at, "assets=B02&rescale=0,2000&pixel_selection=highest");
    let fromTwo = 0;
    expectPixels(t, (px, py) => {
      const i = py * 256 + px;
      const v = [one, two].filter((b) => b.valid[0][i]).map((b) => b.bands[0][i]);
      if (two.valid[0][i]) fromTwo++;
      return v.length ? [clip((Math.max(...v) * 255) / 2000)] : undefined;
    }, 1);
    expect(fromTwo).toBeGreaterThan(100);
  });

  it("needs assets= or an expression naming them: 400", async () => {
    const t = await tile(decoder, "scene", SCENE_TILE);
    expect(t.status).toBe(400);
  });
});

describe("on the other tile matrix sets", () => {
  /** Each member's own tile on `set` (its warp alone), for what the mosaic's tile must hold. */
  const memberTile = async (key: string, set: string, [z, x, y]: number[]) => {
    const cog = await Cog.open(await new LocalCatalog(dir).openKey(key));
    try {
      return await warpTile(cog, parseTileRequest({ tileMatrixSet: set, z: String(z), x: String(x), y: `${y}.png` }, new URLSearchParams()));
    } finally {
      await cog.close();
    }
  };
  /** The tile of `set` at zoom `z` holding Web Mercator point (x, y). */
  const holding = (set: string, z: number, [x, y]: number[]) => {
    const tms = tileMatrixSet(set);
    const at = tileAt(tileMatrix(tms, z)!, ...conversion(setCrs("WebMercatorQuad").definition, setCrs(set).definition)(x, y))!;
    return [z, at.x, at.y];
  };

  it("MosaicJSON on EuropeanETRS89_LAEAQuad: pixel_selection=count is how many members are valid at each pixel, each member found through its quadkeys", async () => {
    // Where a, b and c meet: the north-west corner of tile (P+1, Q+1) at Z.
    const [x0, , , y1] = tileBounds(tileMatrixSet("WebMercatorQuad"), Z, P + 1, Q + 1);
    const at = holding("EuropeanETRS89_LAEAQuad", 11, [x0, y1]);
    const members = await Promise.all([monoA, monoB, monoC].map((f) => memberTile(f.key, "EuropeanETRS89_LAEAQuad", at)));
    const t = await tile(decoder, "mono-mosaic", at, "pixel_selection=count", "EuropeanETRS89_LAEAQuad");
    const counts = new Set<number>();
    expectPixels(t, (px, py) => {
      const count = members.filter((m) => m.valid[0][py * 256 + px]).length;
      counts.add(count);
      return [count];
    });
    expect([...counts].sort()).toEqual([0, 1, 2, 3]);
  });

  it("STAC on UTM33WGS84Quad (its scenes' own CRS, another grid): assets=B04 is the band's own tile", async () => {
    const [x0, y0, x1, y1] = tileBounds(tileMatrixSet("WebMercatorQuad"), 12, 2234, 1420);
    const at = holding("UTM33WGS84Quad", 13, [(x0 + x1) / 2, (y0 + y1) / 2]);
    const band = await memberTile("scene-B04.tif", "UTM33WGS84Quad", at);
    const t = await tile(decoder, "scene", at, "assets=B04&rescale=0,2000", "UTM33WGS84Quad");
    expectPixels(t, (px, py) => (band.valid[0][py * 256 + px] ? [clip((band.bands[0][py * 256 + px] * 255) / 2000)] : undefined), 1);
  });

  it("a tile of a set far from the mosaic is the transparent tile; one outside the set's matrix is 400", async () => {
    const far = await tile(decoder, "mono-mosaic", [3, 1, 1], "", "UTM01WGS84Quad");
    expect([far.status, far.width]).toEqual([200, 256]);
    expect(far.data.every((v, i) => i % far.channels !== far.channels - 1 || v === 0)).toBe(true);
    expect((await tile(decoder, "mono-mosaic", [0, 0, 0], "", "UTM01WGS84Quad")).status).toBe(400);
  });
});

describe("web assets under the access policy, through the tile route", () => {
  let server: AssetServer;
  let dir2: string;
  // A UTM band file of the scene (large enough that a tile's blocks lie past the open's first read).
  const q = [12, 2234, 1420];
  const mosaicOf = (name: string, assets: string[]) => writeMosaic(dir2, name, q, assets);
  const decoderWith = (env: NodeJS.ProcessEnv) => {
    const local = new LocalCatalog(dir2);
    return startDecoder(local, 3, { assets: new AssetSources(readAssetConfig(env), (key, signal) => local.openKey(key, signal)) });
  };

  beforeAll(async () => {
    dir2 = mkdtempSync(path.join(tmpdir(), "tessera-web-assets-"));
    cpSync(path.join(dir, "scene-B04.tif"), path.join(dir2, "b04.tif"));
    server = await startAssetServer(dir2);
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir2, { recursive: true, force: true });
  });

  it("never sends a request to loopback, link-local or a name resolving to loopback, and names the asset without its credentials or query", async () => {
    const urls = [`http://127.0.0.1:${server.port}/b04.tif?sig=secret`, "http://169.254.169.254/latest/meta-data/#x", `http://user:pw@localhost:${server.port}/b04.tif`];
    for (const [i, url] of urls.entries()) mosaicOf(`web${i}`, [url]);
    // The host is allowed; its address is not: an operator who lists a host still gets no loopback.
    const d = await decoderWith({ TESSERA_ASSET_HOSTS: `127.0.0.1:${server.port},localhost:${server.port},169.254.169.254` });
    try {
      for (const [i, url] of urls.entries()) {
        const t = await tile(d, `web${i}`, q);
        const message = JSON.parse(t.data.toString()).message as string;
        expect(t.status, url).toBe(502);
        expect(message, url).toMatch(/refused by the access policy/);
        for (const secret of ["sig=", "secret", "user:pw", "pw@", "#x"]) expect(message, url).not.toContain(secret);
      }
      expect(server.connections).toBe(0);
    } finally {
      await d.close();
    }
  });

  it("reads an allowed web asset with If-Match on every range, the same pixels as the store key", async () => {
    mosaicOf("web", [`http://127.0.0.1:${server.port}/b04.tif`]);
    mosaicOf("stored", ["b04.tif"]);
    const d = await decoderWith({ TESSERA_ASSET_HOSTS: `127.0.0.1:${server.port}`, TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8" });
    try {
      const [web, stored] = [await tile(d, "web", q, "rescale=0,2000"), await tile(d, "stored", q, "rescale=0,2000")];
      expect(web.status).toBe(200);
      expect(web.data.equals(stored.data)).toBe(true);
      const ranged = server.requests.slice(1); // the open's first GET is what learns the ETag
      expect(ranged.length).toBeGreaterThan(0);
      for (const r of ranged) expect(r.headers["if-match"], r.path).toMatch(/^"/);
    } finally {
      await d.close();
    }
  });
});

describe("STAC: several bands in one asset", () => {
  it("reads a three-band asset whole (assets=visual), or its bands by asset_bidx, as the COG's own tile", async () => {
    await inScratch({ "rgb-a.tif": "rgb-a.tif" }, async (dir2) => {
      const item = {
        type: "Feature",
        stac_version: "1.0.0",
        id: "visual-item",
        bbox: [16, 48, 17, 49],
        properties: {},
        assets: { visual: { href: "./rgb-a.tif", "eo:bands": [{ name: "red" }, { name: "green" }, { name: "blue" }] } },
      };
      writeFileSync(path.join(dir2, "visual.stac.json"), JSON.stringify(item));
      const d = await startDecoder(new LocalCatalog(dir2));
      try {
        const at = [Z, P + 1, Q];
        const cog = await tile(d, "rgb-a", at);
        expect((await tile(d, "visual", at, "assets=visual")).data.equals(cog.data)).toBe(true);
        const swapped = await tile(d, "visual", at, `assets=visual&asset_bidx=${encodeURIComponent("visual|3,2,1")}`);
        expect(swapped.data.equals((await tile(d, "rgb-a", at, "bidx=3,2,1")).data)).toBe(true);
      } finally {
        await d.close();
      }
    });
  });
});

describe("a broken mosaic, as the client sees it", () => {
  /** The tile's refusal: its status and message, and the detail the decoder logged beside it. */
  async function refusal(d: Decoder, id: string, at: number[], query = "") {
    const t = await tile(d, id, at, query);
    return { status: t.status, text: t.data.toString(), message: JSON.parse(t.data.toString()).message as string, detail: refusalLog(d, t.requestId)?.detail };
  }
  const at = [Z, P + 1, Q + 1];

  it("a member that is missing: 502 (not a 404 of the mosaic), the log naming it; the tile works once it exists", async () => {
    await inScratch({ [monoC.key]: monoC.key }, async (dir2) => {
      writeMosaic(dir2, "gap", at, ["mono-c.tif", "later.tif"]);
      const d = await startDecoder(new LocalCatalog(dir2));
      try {
        expect(await refusal(d, "gap", at, "pixel_selection=highest")).toMatchObject({
          status: 502,
          message: "a mosaic asset does not exist",
          detail: "mosaic asset later.tif does not exist",
        });
        cpSync(path.join(dir, monoB.key), path.join(dir2, "later.tif"));
        expect((await tile(d, "gap", at, "pixel_selection=highest")).status).toBe(200);
      } finally {
        await d.close();
      }
    });
  });

  it("a document that is not valid, a STAC catalog linking a missing item: the keys for the log alone", async () => {
    await inScratch({ [monoC.key]: monoC.key }, async (dir2) => {
      writeMosaic(dir2, "numbers", at, ["mono-c.tif"]);
      const doc = JSON.parse(readFileSync(path.join(dir2, "numbers.mosaic.json"), "utf8"));
      doc.tiles[tileToQuadkey(Z, P + 1, Q + 1)] = [7];
      writeFileSync(path.join(dir2, "numbers.mosaic.json"), JSON.stringify(doc));
      const catalogOf = (href: string) => ({ type: "Catalog", stac_version: "1.0.0", id: "c", description: "c", links: [{ rel: "item", href }] });
      writeFileSync(path.join(dir2, "gone.stac.json"), JSON.stringify(catalogOf("./hidden/gone.json")));
      mkdirSync(path.join(dir2, "hidden"));
      const d = await startDecoder(new LocalCatalog(dir2));
      try {
        const invalid = await refusal(d, "numbers", at);
        expect(invalid).toMatchObject({ status: 502, message: "the mosaic's MosaicJSON document is invalid" });
        expect(invalid.detail).toMatch(/^mosaic document local:numbers: tiles\[.*must be a string$/);
        expect(await refusal(d, "gone", at, "assets=b")).toMatchObject({ status: 502, message: "a mosaic asset does not exist", detail: "mosaic asset hidden/gone.json does not exist" });
        for (const answer of [invalid]) for (const internal of ["local:", "hidden/", dir2]) expect(answer.text).not.toContain(internal);
      } finally {
        await d.close();
      }
    });
  });

  it("members that differ in bands (400) or are not georeferenced (502): named in the log alone", async () => {
    await inScratch({ [monoC.key]: monoC.key, "rgb-a.tif": "rgb-a.tif" }, async (dir2) => {
      cpSync(path.join(SAMPLES, "test-pattern.tif"), path.join(dir2, "picture.tif"));
      writeMosaic(dir2, "mixed", at, ["mono-c.tif", "rgb-a.tif"]);
      writeMosaic(dir2, "pictures", at, ["picture.tif"]);
      const d = await startDecoder(new LocalCatalog(dir2));
      try {
        const mixed = await refusal(d, "mixed", at);
        expect(mixed).toMatchObject({ status: 400, message: "the assets differ: one brings 1 bands and another 3; choose the bands with bidx or an expression" });
        expect(mixed.detail).toBe("the assets differ: mono-c.tif brings 1 bands and rgb-a.tif 3; choose the bands with bidx or an expression");
        expect(await refusal(d, "pictures", at)).toMatchObject({ status: 502, message: 'mosaic "pictures": an asset is not georeferenced', detail: 'mosaic "pictures": asset picture.tif is not georeferenced' });
      } finally {
        await d.close();
      }
    });
  });

  it("a member that is a restricted source's file: refused as the access policy refuses, the client told no more, once the source is invalidated", async () => {
    await inScratch({ [monoC.key]: monoC.key }, async (dir2) => {
      writeMosaic(dir2, "c", at, ["mono-c.tif"]);
      const d = await startDecoder(new LocalCatalog(dir2));
      const entry = (access: unknown) => writeFileSync(path.join(dir2, "mono-c.tessera.json"), JSON.stringify({ access }));
      const refused = "a mosaic asset is refused by the access policy";
      const because = `local:mono-c.tif: ${refused}: it is a file of source "mono-c", whose catalog entry`;
      try {
        expect((await tile(d, "c", at)).status).toBe(200); // open: painted, and kept open as a member
        entry({ profile: "active", degradedWidth: 100 });
        // What `tessera access` has the edge do: the source's snapshots, its file as a member among them, are dropped.
        expect(await (await signedPost(d, DECODER.invalidate("mono-c"))).json()).toEqual({ id: "mono-c", dropped: 1 });
        expect(await refusal(d, "c", at)).toMatchObject({ status: 502, message: refused, detail: `${because} restricts who may see it (profile active)` });
        // A refused member is not kept open: the next tile reads the entry again.
        entry({ profile: "active", degradedWidth: -1 });
        expect(await refusal(d, "c", at)).toMatchObject({
          status: 502,
          message: refused,
          detail: `${because} has an access rule this version cannot read (degradedWidth -1 is not a positive whole number of pixels)`,
        });
        entry("open");
        expect((await tile(d, "c", at)).status).toBe(200);
      } finally {
        await d.close();
      }
    });
  });
});

describe("a STAC item and a MosaicJSON across 180° (west > east)", () => {
  const member = WORLD_EDGE_FIXTURES.lonLatAcross;
  // Zoom 5 tiles holding 2.5°N: 175°E (x 31) and 175°W (x 0), either side of 180°.
  const sides = [
    [5, 31, 15],
    [5, 0, 15],
  ];

  it("paint the member's own tile on both sides, on WebMercatorQuad and WorldCRS84Quad, and say where they lie as one box past 180°", async () => {
    const memberFile = path.join(worldEdgeFixtures(), `${member.id}.tif`);
    await inScratch({}, async (dir2) => {
      cpSync(memberFile, path.join(dir2, "across.tif"));
      const item = { type: "Feature", stac_version: "1.0.0", id: "pacific", bbox: [170, -5, -170, 5], properties: {}, assets: { b: { href: "./across.tif" } } };
      writeFileSync(path.join(dir2, "pacific.stac.json"), JSON.stringify(item));
      const keys = [...sides, [5, 31, 16], [5, 0, 16]].map(([z, x, y]) => tileToQuadkey(z, x, y));
      const doc = { mosaicjson: "0.0.3", minzoom: 3, maxzoom: 8, quadkey_zoom: 5, bounds: [170, -5, -170, 5], tiles: Object.fromEntries(keys.map((k) => [k, ["across.tif"]])) };
      writeFileSync(path.join(dir2, "pacific-index.mosaic.json"), JSON.stringify(doc));
      const d = await startDecoder(new LocalCatalog(dir2));
      try {
        // …and on WorldCRS84Quad, zoom 4 (11.25° tiles): 168.75–180°E (x 31) and 180–168.75°W (x 0).
        const cases: [string, number[]][] = [...sides.map((t): [string, number[]] => ["WebMercatorQuad", t]), ["WorldCRS84Quad", [4, 31, 7]], ["WorldCRS84Quad", [4, 0, 7]]];
        for (const [set, at] of cases) {
          const own = await tile(d, "across", at, "", set);
          expect(own.status, `${at}`).toBe(200);
          const opaque = own.data.filter((_, i) => i % own.channels === own.channels - 1 && own.data[i] > 0).length;
          expect(opaque, `${set} ${at}: the member has data there`).toBeGreaterThan(1000);
          for (const [id, query] of [["pacific", "assets=b"], ["pacific-index", ""]] as const) {
            const painted = await tile(d, id, at, query, set);
            expect(painted.status, `${id} ${at} ${painted.status === 200 ? "" : painted.data.toString()}`).toBe(200);
            expect(painted.data.equals(own.data), `${id} ${at}: the member's pixels`).toBe(true);
          }
        }
        for (const id of ["pacific", "pacific-index"]) {
          const info = (await (await signedGet(d, `/v1/info/${id}`)).json()) as { georeference: { lonLatBounds: number[]; tiling: Record<string, { bounds: number[] }> } };
          expect(info.georeference.lonLatBounds).toEqual([170, -5, 190, 5]);
          expect(info.georeference.tiling.WebMercatorQuad.bounds[2]).toBeGreaterThan(20037508.34);
        }
      } finally {
        await d.close();
      }
    });
  });
});
