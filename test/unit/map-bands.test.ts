// Sources of every sample type open; map tiles read their bands raw, with each band's validity
// from the file's internal masks, an alpha band, its nodata or the request's, against GDAL's
// reading of the same windows. IIIF images of non-8-bit sources stay 501.
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { readBands } from "../../regional/cog/bands";
import { DecodedBlockCache } from "../../regional/cog/block-cache";
import { LocalCatalog } from "../../regional/source/local";
import { WorkBudget } from "../../regional/runtime/work-budget";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { gdalWindow } from "../support/gdal-reference";
import { mapUnitFixtures } from "../support/map-fixtures";
import { RecordingCatalog, signedGet, startDecoder } from "./regional-helpers";

let dir: string;
let catalog: LocalCatalog;
beforeAll(() => {
  dir = mapUnitFixtures();
  catalog = new LocalCatalog(dir);
}, 60_000);
const file = (id: string) => path.join(dir, `${id}.tif`);

async function bandsOf(id: string, level: number, window: [number, number, number, number], bands: number[], nodata?: number) {
  const cog = await Cog.open(await catalog.open(id, undefined));
  const work = new WorkBudget().tryReserve(1, "test");
  try {
    return await readBands(cog, level, window, bands, nodata, new AbortController().signal, work);
  } finally {
    work.release();
    await cog.close();
  }
}

/** Count of positions where GDAL's and the decoder's planes disagree. */
function differences(got: ArrayLike<number>, expected: ArrayLike<number>): number {
  let n = 0;
  for (let i = 0; i < expected.length; i++) if (got[i] !== expected[i]) n++;
  return n;
}

describe("band reads", () => {
  it("take validity from the file's internal mask, at full resolution and on an overview", async () => {
    for (const [level, window] of [[0, [0, 0, 300, 400]], [1, [100, 150, 410, 581]]] as const) {
      const planes = await bandsOf("rgb-utm", level, [...window], [1, 2, 3]);
      const gdal = await gdalWindow(file("rgb-utm"), level, [...window], [1, 2, 3]);
      expect(gdal.mask[0].includes(0) && gdal.mask[0].includes(1), "the window crosses the mask's edge").toBe(true);
      planes.forEach((p, b) => expect(differences(p.valid, gdal.mask[b]), `level ${level} band ${b + 1} validity`).toBe(0));
    }
  });

  it("read a window's mask once: the same window again reads and decodes nothing", async () => {
    const recording = new RecordingCatalog(catalog);
    const cog = await Cog.open(await recording.open("rgb-utm", undefined));
    const work = new WorkBudget().tryReserve(1, "test");
    const read = () => readBands(cog, 1, [100, 150, 410, 581], [1, 2, 3], undefined, new AbortController().signal, work);
    try {
      const first = await read();
      expect(first[0].valid.includes(0) && first[0].valid.includes(1), "the window crosses the mask's edge").toBe(true);
      const bytes = recording.bytesRead();
      const again = await read();
      expect(recording.bytesRead() - bytes, "bytes read again").toBe(0);
      expect(differences(again[0].valid, first[0].valid)).toBe(0);
    } finally {
      work.release();
      await cog.close();
    }
  });

  it("read float samples raw, invalid at the file's nodata or the request's", async () => {
    const window: [number, number, number, number] = [180, 80, 330, 180];
    const [plane] = await bandsOf("dem", 0, window, [1]);
    const gdal = await gdalWindow(file("dem"), 0, window, [1]);
    expect(differences(plane.values, Float32Array.from(gdal.values[0])), "values").toBe(0);
    expect(differences(plane.valid, gdal.mask[0]), "validity").toBe(0);
    expect(plane.valid.includes(0)).toBe(true);
    // A request's nodata replaces the file's: -9999 becomes a value, 0 would be nodata.
    const [overridden] = await bandsOf("dem", 0, window, [1], 0);
    expect(overridden.valid.every((v) => v === 1)).toBe(true);
  });

  it("read 16-bit bands in any order, every value as stored", async () => {
    const window: [number, number, number, number] = [250, 100, 400, 300];
    const planes = await bandsOf("u16", 0, window, [4, 2]);
    const gdal = await gdalWindow(file("u16"), 0, window, [4, 2]);
    planes.forEach((p, i) => expect(differences(p.values, gdal.values[i]), `band ${[4, 2][i]}`).toBe(0));
    expect(planes[0].values.some((v) => v > 255)).toBe(true);
  });

  it("keep 8-bit samples as bytes (exact in the kernels' float sums), every other type as floats", async () => {
    const bytes = await bandsOf("rgb-utm", 1, [100, 150, 410, 581], [1, 2, 3]);
    expect(bytes.map((p) => p.values.constructor.name)).toEqual(["Uint8Array", "Uint8Array", "Uint8Array"]);
    const [dem] = await bandsOf("dem", 0, [180, 80, 330, 180], [1]);
    const u16 = await bandsOf("u16", 0, [250, 100, 400, 300], [4, 2]);
    expect([dem, ...u16].map((p) => p.values.constructor.name)).toEqual(["Float32Array", "Float32Array", "Float32Array"]);
  });
});

describe("decoded blocks of every sample type", () => {
  it("are decoded once: the same float and 16-bit windows again decode no block and read no byte, as GDAL reads them", async () => {
    for (const [id, window, bands] of [["dem", [180, 80, 330, 180], [1]], ["u16", [250, 100, 400, 300], [4, 2]]] as const) {
      const cache = new DecodedBlockCache();
      const recording = new RecordingCatalog(catalog);
      const cog = await Cog.open(await recording.open(id, undefined), { cache });
      const work = new WorkBudget().tryReserve(1, "test");
      const read = () => readBands(cog, 0, [...window], [...bands], undefined, new AbortController().signal, work);
      try {
        const first = await read();
        expect(cache.decoded, `${id}: blocks decoded into the cache`).toBeGreaterThan(0);
        const [decoded, bytes] = [cache.decoded, recording.bytesRead()];
        const again = await read();
        expect(cache.decoded - decoded, `${id}: blocks decoded again`).toBe(0);
        expect(recording.bytesRead() - bytes, `${id}: bytes read again`).toBe(0);
        const gdal = await gdalWindow(file(id), 0, [...window], [...bands]);
        for (const planes of [first, again]) {
          planes.forEach((p, i) => {
            expect(differences(p.values, Float32Array.from(gdal.values[i])), `${id} band ${bands[i]} values`).toBe(0);
            expect(differences(p.valid, gdal.mask[i]), `${id} band ${bands[i]} validity`).toBe(0);
          });
        }
      } finally {
        work.release();
        await cog.close();
      }
    }
  });
});

describe("non-8-bit sources", () => {
  it("open: info and their georeference are served; a IIIF image of them is 501, naming the samples", async () => {
    const d = await startDecoder(catalog);
    try {
      for (const [id, bits] of [["dem", "32-bit"], ["u16", "16-bit"]]) {
        const res = await signedGet(d, DECODER.info(id));
        expect(res.status, id).toBe(200);
        const info = (await res.json()) as SourceInfo;
        expect(info.georeference?.crs, id).toMatch(/^EPSG:/);
        const image = await signedGet(d, DECODER.image(id, "full/max/0/default.png", info.version));
        expect(image.status, id).toBe(501);
        const { message } = (await image.json()) as { message: string };
        expect(message).toContain("map tiles serve them");
        if (id === "u16") expect(message).toContain(bits);
      }
    } finally {
      await d.close();
    }
  });
});
