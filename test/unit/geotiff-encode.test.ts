// The crop routes' GeoTIFF encoder, read back by GDAL (what a GIS opening the answer sees) and
// by geotiff.js: for EPSG:4326, EPSG:32633, EPSG:3857 and a user-defined CRS copied from a
// GDAL-made file's GeoKeys, every sample type, 1 and 3 bands, with nodata given, chosen, or
// none: the CRS (EPSG code, or the same WKT as the source's), the geotransform exactly, the
// nodata value, band count and type, and every pixel exactly (invalid ones masked by GDAL).
// Then a rotated and a south-up geotransform, band names, the nodata chosen when an integer
// type's minimum (or every value) is taken, the answer's size against the raw planes, and
// inconsistent input refused.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fromArrayBuffer, fromFile } from "geotiff";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeGeoTiff, type GeoTiffCrs, type GeoTiffInput, type SamplePlane } from "../../regional/encode/geotiff";
import type { Affine } from "../../regional/maps/transformer";
import { gdalInfo, gdalWindow } from "../support/gdal-reference";
import { MAP_FIXTURES } from "../support/map-fixtures";
import { SAMPLES } from "./regional-helpers";

let dir: string;
/** The user-defined CRS: Lambert conformal conic written by GDAL from a PROJ string, no EPSG code. */
const LCC = "+proj=lcc +lat_1=49 +lat_2=44 +lat_0=46.5 +lon_0=3 +x_0=700000 +y_0=6600000 +ellps=GRS80 +units=m +no_defs";
let lccFile: string;
let lccKeys: Record<string, unknown>;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-geotiff-encode-"));
  lccFile = path.join(dir, "lcc-source.tif");
  execFileSync("gdal_translate", ["-q", "-outsize", "32", "32", "-a_srs", LCC, "-a_ullr", "700000", "6600000", "800000", "6500000", path.join(SAMPLES, "test-pattern.tif"), lccFile]);
  lccKeys = (await (await fromFile(lccFile)).getImage()).getGeoKeys() as Record<string, unknown>;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

type TypeName = "Byte" | "UInt16" | "Int16" | "UInt32" | "Int32" | "Float32" | "Float64";
const TYPES: Record<TypeName, { make: (n: number) => SamplePlane; min: number; max: number }> = {
  Byte: { make: (n) => new Uint8Array(n), min: 0, max: 255 },
  UInt16: { make: (n) => new Uint16Array(n), min: 0, max: 65535 },
  Int16: { make: (n) => new Int16Array(n), min: -32768, max: 32767 },
  UInt32: { make: (n) => new Uint32Array(n), min: 0, max: 2 ** 32 - 1 },
  Int32: { make: (n) => new Int32Array(n), min: -(2 ** 31), max: 2 ** 31 - 1 },
  Float32: { make: (n) => new Float32Array(n), min: -3.4e38, max: 3.4e38 },
  Float64: { make: (n) => new Float64Array(n), min: -1e300, max: 1e300 },
};
const FLOAT = (type: TypeName) => type.startsWith("Float");

/** Two tiles across and down, the second of each cut short: padding must not leak into pixels. */
const [W, H] = [300, 270];

/**
 * Band `band`'s pixels: a hash over the whole range, never the type's minimum (so an unspecified
 * nodata can be it), with the maximum and values far from zero at fixed pixels; floats have
 * fractions a float32 (for Float64) cannot hold.
 */
function plane(type: TypeName, band: number): SamplePlane {
  const { make, min, max } = TYPES[type];
  const out = make(W * H);
  for (let i = 0; i < out.length; i++) {
    const h = (i * 2654435761 + band * 40503 * 7919) % 1000003;
    out[i] = FLOAT(type) ? (h - 500000) / 3 : min + 1 + (((i * 2654435761 + band * 977) % (max - min)) >>> 0);
  }
  out[1] = max;
  out[2] = FLOAT(type) ? min : min + 1;
  return out;
}

/** Per band, invalid pixels: a diagonal lattice and a block, each band's shifted (nodata is per band). */
const validity = (bands: number) =>
  Array.from({ length: bands }, (_, b) => Uint8Array.from({ length: W * H }, (_, i) => ((i % W) + 2 * Math.floor(i / W) + b) % 17 === 0 || (i % W >= 100 + b * 10 && i % W < 140 && Math.floor(i / W) < 40) ? 0 : 1));

interface Place {
  name: string;
  crs: GeoTiffCrs;
  affine: Affine;
  /** What GDAL must report: the EPSG code, or the WKT of this file (the user-defined CRS's source). */
  epsg?: number;
  sameWktAs?: () => string;
}

const PLACES: Place[] = [
  { name: "EPSG:4326", crs: { epsg: 4326 }, epsg: 4326, affine: MAP_FIXTURES.wgs84Uint16.geoTransform },
  { name: "EPSG:32633", crs: { epsg: 32633 }, epsg: 32633, affine: MAP_FIXTURES.utmRgb.geoTransform },
  { name: "EPSG:3857", crs: { epsg: 3857 }, epsg: 3857, affine: MAP_FIXTURES.mercatorGrey.geoTransform },
  { name: "user-defined LCC", crs: { get geoKeys() { return lccKeys; } }, sameWktAs: () => lccFile, affine: [700000, 30, 0, 6600000, 0, -30] },
];

interface Case {
  type: TypeName;
  place: Place;
  bands: 1 | 3;
  /** "given": nodata passed and invalid pixels; "chosen": invalid pixels, no nodata; "none": all valid. */
  nodata: "given" | "chosen" | "none";
}

const GIVEN_NODATA: Record<TypeName, number> = { Byte: 7, UInt16: 65535, Int16: -9999, UInt32: 4000000000, Int32: -2147483648, Float32: -9999, Float64: -1e-300 };

const CASES: Case[] = (Object.keys(TYPES) as TypeName[]).flatMap((type, i): Case[] => [
  { type, place: PLACES[i % 4], bands: 1, nodata: "given" },
  { type, place: PLACES[(i + 1) % 4], bands: 3, nodata: "chosen" },
  { type, place: PLACES[(i + 2) % 4], bands: 3, nodata: "none" },
  { type, place: PLACES[(i + 3) % 4], bands: 1, nodata: "chosen" },
]);

function inputOf(c: Case): GeoTiffInput {
  const bands = Array.from({ length: c.bands }, (_, b) => plane(c.type, b));
  // A given nodata is not a valid pixel's value (a source's nodata never is).
  if (c.nodata === "given") for (const band of bands) for (let i = 0; i < band.length; i++) if (band[i] === GIVEN_NODATA[c.type]) band[i] = TYPES[c.type].min + 1;
  return {
    width: W,
    height: H,
    bands,
    ...(c.nodata !== "none" && { valid: validity(c.bands) }),
    ...(c.nodata === "given" && { nodata: GIVEN_NODATA[c.type] }),
    crs: c.place.crs,
    affine: c.place.affine,
  };
}

async function written(name: string, input: GeoTiffInput): Promise<{ file: string; bytes: Buffer }> {
  const bytes = encodeGeoTiff(input);
  const file = path.join(dir, `${name}.tif`);
  await writeFile(file, bytes);
  return { file, bytes };
}

/** The first pixel where `got` is not `want` (masked where `valid` is 0), or undefined. */
function firstDifference(want: SamplePlane, valid: Uint8Array | undefined, got: ArrayLike<number>, gotMask: Uint8Array): string | undefined {
  for (let i = 0; i < want.length; i++) {
    const ok = valid ? valid[i] === 1 : true;
    if (gotMask[i] !== (ok ? 1 : 0)) return `pixel ${i % W},${Math.floor(i / W)}: GDAL's mask ${gotMask[i]}, want valid=${ok}`;
    if (ok && !Object.is(got[i], want[i])) return `pixel ${i % W},${Math.floor(i / W)}: ${got[i]}, want ${want[i]}`;
  }
  return undefined;
}

interface Info {
  geoTransform: number[];
  coordinateSystem: { wkt: string };
  stac: { "proj:epsg"?: number | null };
  bands: { type: string; noDataValue?: number | string; description?: string; mask?: { flags: string[] } }[];
  metadata: Record<string, Record<string, string>>;
}

describe("GeoTIFF answers as GDAL reads them", () => {
  it.each(CASES.map((c) => [`${c.type}, ${c.bands} band(s), nodata ${c.nodata}, ${c.place.name}`, c] as const))("%s", async (name, c) => {
    const input = inputOf(c);
    const { file } = await written(name.replace(/[^\w]+/g, "-"), input);
    const info = (await gdalInfo(file)) as unknown as Info;

    if (c.place.epsg !== undefined) expect(info.stac["proj:epsg"]).toBe(c.place.epsg);
    else expect(info.coordinateSystem.wkt).toBe(((await gdalInfo(c.place.sameWktAs!())) as unknown as Info).coordinateSystem.wkt);
    expect(info.geoTransform).toEqual(c.place.affine);
    expect(info.metadata[""]?.AREA_OR_POINT).toBe("Area");
    expect(info.bands.map((b) => b.type)).toEqual(Array(c.bands).fill(c.type));
    // Chosen: NaN for floats, the integer type's minimum (no valid pixel has it here).
    const nodata = { given: GIVEN_NODATA[c.type], chosen: FLOAT(c.type) ? "NaN" : TYPES[c.type].min, none: undefined }[c.nodata];
    for (const band of info.bands) expect(band.noDataValue).toEqual(nodata);

    const bandNumbers = input.bands.map((_, b) => b + 1);
    const gdal = await gdalWindow(file, 0, [0, 0, W, H], bandNumbers);
    input.bands.forEach((want, b) => expect(firstDifference(want, input.valid?.[b], gdal.values[b], gdal.mask[b]), `band ${b + 1}`).toBeUndefined());
  });
});

describe("GeoTIFF answers as geotiff.js reads them", () => {
  it.each(CASES.map((c) => [`${c.type}, ${c.bands} band(s), nodata ${c.nodata}, ${c.place.name}`, c] as const))("%s", async (_, c) => {
    const input = inputOf(c);
    const bytes = encodeGeoTiff(input);
    const image = await (await fromArrayBuffer(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)).getImage();
    expect([image.getWidth(), image.getHeight(), image.getSamplesPerPixel()]).toEqual([W, H, c.bands]);
    const keys = image.getGeoKeys()!;
    if (c.place.epsg === 4326) expect(keys.GeographicTypeGeoKey).toBe(4326);
    else if (c.place.epsg !== undefined) expect(keys.ProjectedCSTypeGeoKey).toBe(c.place.epsg);
    else expect({ ...keys, GTRasterTypeGeoKey: undefined }).toEqual({ ...lccKeys, GTRasterTypeGeoKey: undefined });
    const [t0, t1, , t3, , t5] = c.place.affine;
    expect([...image.getOrigin().slice(0, 2), ...image.getResolution().slice(0, 2)]).toEqual([t0, t3, t1, t5]);

    const nodata = image.getGDALNoData();
    const rasters = (await image.readRasters()) as unknown as SamplePlane[];
    input.bands.forEach((want, b) => {
      expect(rasters[b].constructor).toBe(want.constructor);
      const expected = want.map((v, i) => (input.valid && !input.valid[b][i] ? (nodata ?? Number.NaN) : v));
      const at = expected.findIndex((v, i) => !Object.is(rasters[b][i], v));
      expect(at, `band ${b + 1}: first different pixel`).toBe(-1);
    });
  });
});

describe("geotransforms", () => {
  it.each([
    ["rotated 30°", [440000, 8.660254037844387, 5, 5045000, 5, -8.660254037844387]],
    ["sheared", [440000, 10, 2.5, 5045000, 0, -10]],
    ["south-up", [440000, 10, 0, 5043000, 0, 10]],
  ] as [string, Affine][])("GDAL reads a %s grid's geotransform back exactly, its pixels in place", async (name, affine) => {
    const bands = [plane("UInt16", 0)];
    const { file } = await written(`transform-${name.replace(/\W+/g, "-")}`, { width: W, height: H, bands, crs: { epsg: 32633 }, affine });
    const info = (await gdalInfo(file)) as unknown as Info;
    expect(info.geoTransform).toEqual(affine);
    const gdal = await gdalWindow(file, 0, [0, 0, W, H], [1]);
    expect(firstDifference(bands[0], undefined, gdal.values[0], gdal.mask[0])).toBeUndefined();
  });
});

describe("band names and nodata choices", () => {
  it("names each band's description as GDAL reads it, characters XML reserves included", async () => {
    const bandNames = ["red", "nir <b8> & \"ndvi\"", "élévation"];
    const { file } = await written("names", { width: W, height: H, bands: [0, 1, 2].map((b) => plane("Byte", b)), crs: { epsg: 4326 }, affine: [0, 1, 0, 0, 0, -1], bandNames });
    expect(((await gdalInfo(file)) as unknown as Info).bands.map((b) => b.description)).toEqual(bandNames);
  });

  /** A Byte band of `values` repeated, its first pixel invalid. */
  const byteBand = (values: number[], type: TypeName = "Byte") => {
    const band = TYPES[type].make(W * H);
    for (let i = 0; i < band.length; i++) band[i] = values[i % values.length];
    const valid = new Uint8Array(W * H).fill(1);
    valid[0] = 0;
    return { band, valid };
  };

  it.each([
    ["the type's maximum, when a valid pixel has its minimum", "Byte", [0, 10, 200], 255],
    ["the smallest free value, when both ends are taken", "UInt16", [0, 1, 2, 4, 65535], 3],
  ] as [string, TypeName, number[], number][])("chooses %s", async (_, type, values, want) => {
    const { band, valid } = byteBand(values, type);
    const { file } = await written(`chosen-${type}`, { width: W, height: H, bands: [band], valid: [valid], crs: { epsg: 4326 }, affine: [0, 1, 0, 0, 0, -1] });
    expect(((await gdalInfo(file)) as unknown as Info).bands[0].noDataValue).toBe(want);
    const gdal = await gdalWindow(file, 0, [0, 0, W, H], [1]);
    expect(firstDifference(band, valid, gdal.values[0], gdal.mask[0])).toBeUndefined();
  });

  it("masks the pixels invalid in any band with an internal mask when every 8-bit value is taken", async () => {
    const all = Array.from({ length: 256 }, (_, v) => v);
    const bands = [0, 1, 2].map((b) => byteBand(all.map((v) => (v + b * 50) % 256)));
    bands[1].valid[W + 3] = 0; // invalid in one band only: masked in all, as rio-tiler's mask is
    const { file } = await written("mask-fallback", { width: W, height: H, bands: bands.map((b) => b.band), valid: bands.map((b) => b.valid), crs: { epsg: 4326 }, affine: [0, 1, 0, 0, 0, -1] });
    const info = (await gdalInfo(file)) as unknown as Info;
    expect(info.bands.map((b) => [b.noDataValue, b.mask?.flags])).toEqual(Array(3).fill([undefined, ["PER_DATASET"]]));
    const together = Uint8Array.from({ length: W * H }, (_, i) => (i === 0 || i === W + 3 ? 0 : 1));
    const gdal = await gdalWindow(file, 0, [0, 0, W, H], [1, 2, 3]);
    bands.forEach(({ band }, b) => expect(firstDifference(band, together, gdal.values[b], gdal.mask[b]), `band ${b + 1}`).toBeUndefined());
  });
});

describe("size", () => {
  it("is about the raw planes for incompressible samples, and small for a thin strip of tiles mostly padding", () => {
    let seed = 1;
    const noise = Float64Array.from({ length: 600 * 500 }, () => ((seed = (seed * 48271) % 2147483647) / 2147483647) * 1e6);
    const big = encodeGeoTiff({ width: 600, height: 500, bands: [noise], crs: { epsg: 4326 }, affine: [0, 1, 0, 0, 0, -1] });
    expect(big.length).toBeLessThan(noise.byteLength * 1.01);
    const thin = Float32Array.from({ length: 1 * 2000 }, (_, i) => i);
    const strip = encodeGeoTiff({ width: 1, height: 2000, bands: [thin], crs: { epsg: 4326 }, affine: [0, 1, 0, 0, 0, -1] });
    expect(strip.length).toBeLessThan(thin.byteLength * 2);
  });
});

describe("inconsistent input is a programming error, refused with what is wrong", () => {
  const base = (): GeoTiffInput => ({ width: 4, height: 3, bands: [new Uint8Array(12)], crs: { epsg: 4326 }, affine: [0, 1, 0, 0, 0, -1] });
  it.each([
    ["a 0×0 size", { width: 0, height: 0, bands: [new Uint8Array(0)] }, /size must be positive/],
    ["a 0-wide size", { width: 0 }, /size must be positive/],
    ["no bands", { bands: [] }, /0 bands/],
    ["a plane of the wrong length", { bands: [new Uint8Array(12), new Uint8Array(11)] }, /band 2 has 11 samples, not 4×3/],
    ["planes of different types", { bands: [new Uint8Array(12), new Uint16Array(12)] }, /band 2 is Uint16Array/],
    ["a sample type TIFF answers do not carry", { bands: [new Int8Array(12)] }, /Int8Array is not a sample type/],
    ["validity of the wrong length", { valid: [new Uint8Array(5)] }, /validity needs one plane of 4×3 per band/],
    ["a nodata the type cannot hold", { nodata: -1 }, /nodata -1 is not a Uint8Array value/],
    ["a geotransform that cannot be inverted", { affine: [0, 1, 0, 0, 0, 0] }, /not invertible/],
    ["an unknown EPSG code", { crs: { epsg: 999999 } }, /EPSG:999999 is not a CRS/],
    ["band names that do not match the bands", { bandNames: ["a", "b"] }, /2 band names for 1 bands/],
  ] as [string, Partial<GeoTiffInput>, RegExp][])("%s", (_, change, message) => {
    expect(() => encodeGeoTiff({ ...base(), ...change })).toThrow(message);
  });
});
