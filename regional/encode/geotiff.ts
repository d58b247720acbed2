// GeoTIFF answers of the crop routes (/bbox, /feature, /preview as .tif): the pixels' own values,
// not a picture. What a GIS (GDAL, QGIS, rasterio) gets:
// - one image, its bands as given, each band's samples of one type (8/16/32-bit integers,
//   32/64-bit floats), 256 × 256 tiles, each band's tiles apart (PlanarConfiguration 2),
//   DEFLATE with the horizontal predictor for integers and the floating-point one for floats;
// - its CRS as GeoKeys: an EPSG code (GeographicTypeGeoKey for a longitude/latitude CRS,
//   ProjectedCSTypeGeoKey otherwise), or a source's own GeoKey directory copied as it was (a
//   user-defined CRS); PixelIsArea, so the geotransform names pixel corners, as GDAL's does;
// - its place: ModelPixelScale + ModelTiepoint for a north-up grid, ModelTransformation for a
//   rotated or sheared one, so GDAL reads back the geotransform it was given;
// - nodata (GDAL_NODATA), where a band's pixel is not valid. Without a nodata given, floats use
//   NaN; integers the type's minimum if no valid pixel has it, else its maximum, else the
//   smallest value no valid pixel has. When every value of the type is taken (an 8-bit photo
//   with a masked footprint), an internal mask (GDAL's per-dataset mask) marks the pixels valid
//   in every band instead, and invalid pixels are 0;
// - band names as band descriptions (GDAL_METADATA).
//
// Written here rather than by geotiff.js's writeArrayBuffer, which writes one uncompressed strip
// of interleaved samples, drops Int16/Int32 samples (it has no case for them), keeps every tag in
// a fixed 1000-byte IFD (too small for band names or a user-defined CRS's citations) and boxes
// every sample into an Array when given planes.
//
// Memory: the answer holds the compressed tiles (at most the raw planes plus deflate's 0.1% for
// incompressible data; the tiles' padding past the image edges compresses to almost nothing),
// and while the file is put together both they and the file are held: at most about twice the
// raw planes, plus one tile. Nothing here is shared between calls: safe in a render-pool thread.
import { deflateSync } from "node:zlib";
import { globals } from "geotiff";
import { crsOfGeoKeys } from "../maps/crs";
import type { Affine } from "../maps/transformer";

export type SamplePlane = Uint8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array;

export interface GeoTiffCrs {
  /** An EPSG code. */
  epsg?: number;
  /** A source's own GeoKeys, as geotiff.js's getGeoKeys() names them, copied as they are. */
  geoKeys?: Record<string, unknown>;
}

export interface GeoTiffInput {
  width: number;
  height: number;
  /** One plane a band, row by row, all of one sample type. */
  bands: SamplePlane[];
  /** Per band, 1 where the pixel is valid, 0 where it is to be nodata; absent: all valid. */
  valid?: Uint8Array[];
  nodata?: number;
  crs: GeoTiffCrs;
  /** GDAL's geotransform, pixel corner (column, row) → the CRS's own units. */
  affine: Affine;
  bandNames?: string[];
}

const TILE = 256;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

interface SampleType {
  bits: number;
  /** TIFF SampleFormat: 1 unsigned, 2 signed, 3 float. */
  format: 1 | 2 | 3;
  min: number;
  max: number;
  make(n: number): SamplePlane;
}

const SAMPLE_TYPES = new Map<Function, SampleType>([
  [Uint8Array, { bits: 8, format: 1, min: 0, max: 255, make: (n) => new Uint8Array(n) }],
  [Uint16Array, { bits: 16, format: 1, min: 0, max: 65535, make: (n) => new Uint16Array(n) }],
  [Int16Array, { bits: 16, format: 2, min: -32768, max: 32767, make: (n) => new Int16Array(n) }],
  [Uint32Array, { bits: 32, format: 1, min: 0, max: 2 ** 32 - 1, make: (n) => new Uint32Array(n) }],
  [Int32Array, { bits: 32, format: 2, min: -(2 ** 31), max: 2 ** 31 - 1, make: (n) => new Int32Array(n) }],
  [Float32Array, { bits: 32, format: 3, min: -Infinity, max: Infinity, make: (n) => new Float32Array(n) }],
  [Float64Array, { bits: 64, format: 3, min: -Infinity, max: Infinity, make: (n) => new Float64Array(n) }],
]);

/** The GeoTIFF file of `input`; throws (a programming error: the route validated sizes) on inconsistent input. */
export function encodeGeoTiff(input: GeoTiffInput): Buffer {
  const type = checkInput(input);
  const { nodata, mask } = nodataOf(input, type);
  const tags = new TagSet();
  imageTags(tags, input, type);
  placeTags(tags, input.affine);
  geoKeyTags(tags, input.crs);
  if (nodata !== undefined) tags.ascii(42113, Number.isNaN(nodata) ? "nan" : String(nodata)); // GDAL_NODATA
  if (input.bandNames?.length) tags.ascii(42112, gdalMetadata(input.bandNames)); // GDAL_METADATA
  const tiles = encodeTiles(input, type, nodata);
  const images = [{ tags, tiles }];
  if (mask) images.push(maskImage(input.width, input.height, mask));
  return layOut(images);
}

function checkInput({ width, height, bands, valid, nodata, affine, bandNames }: GeoTiffInput): SampleType {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > 0xffffffff || height > 0xffffffff) {
    throw new Error(`encodeGeoTiff: the size must be positive integers, not ${width}×${height}`);
  }
  if (bands.length < 1 || bands.length > 0xffff) throw new Error(`encodeGeoTiff: ${bands.length} bands`);
  const type = SAMPLE_TYPES.get(bands[0].constructor);
  if (!type) throw new Error(`encodeGeoTiff: ${bands[0].constructor.name} is not a sample type it writes`);
  const n = width * height;
  bands.forEach((band, b) => {
    if (band.constructor !== bands[0].constructor) throw new Error(`encodeGeoTiff: band ${b + 1} is ${band.constructor.name}, band 1 ${bands[0].constructor.name}`);
    if (band.length !== n) throw new Error(`encodeGeoTiff: band ${b + 1} has ${band.length} samples, not ${width}×${height}`);
  });
  if (valid && (valid.length !== bands.length || valid.some((v) => v.length !== n))) {
    throw new Error(`encodeGeoTiff: validity needs one plane of ${width}×${height} per band`);
  }
  if (nodata !== undefined && !representable(nodata, type)) throw new Error(`encodeGeoTiff: nodata ${nodata} is not a ${bands[0].constructor.name} value`);
  if (affine.length !== 6 || !affine.every(Number.isFinite) || affine[1] * affine[5] - affine[2] * affine[4] === 0) {
    throw new Error(`encodeGeoTiff: the geotransform ${affine.join(",")} is not invertible`);
  }
  if (bandNames && bandNames.length !== bands.length) throw new Error(`encodeGeoTiff: ${bandNames.length} band names for ${bands.length} bands`);
  return type;
}

const representable = (v: number, type: SampleType) => (type.format === 3 ? true : Number.isInteger(v) && v >= type.min && v <= type.max);

/**
 * The nodata value written where a band's pixel is invalid, and the per-dataset mask (1 valid in
 * every band) when an integer type has no value to spare for it.
 */
function nodataOf({ bands, valid, nodata }: GeoTiffInput, type: SampleType): { nodata?: number; mask?: Uint8Array } {
  if (nodata !== undefined) return { nodata };
  if (!valid || valid.every((plane) => !plane.includes(0))) return {};
  if (type.format === 3) return { nodata: Number.NaN };
  const spare = spareValue(bands, valid, type);
  if (spare !== undefined) return { nodata: spare };
  const mask = new Uint8Array(valid[0].length).fill(1);
  for (const plane of valid) for (let i = 0; i < plane.length; i++) mask[i] &= plane[i] ? 1 : 0;
  return { mask };
}

/**
 * A value no valid sample has: the type's minimum, its maximum, or else the smallest. With N
 * valid samples one of the N + 1 values from the minimum up is free, so only those are counted.
 */
function spareValue(bands: SamplePlane[], valid: Uint8Array[], type: SampleType): number | undefined {
  const span = Math.min(type.max - type.min + 1, bands.length * bands[0].length + 1);
  const seen = new Uint8Array(span);
  let max = false;
  bands.forEach((band, b) => {
    for (let i = 0; i < band.length; i++) {
      if (!valid[b][i]) continue;
      const at = band[i] - type.min;
      if (at < span) seen[at] = 1;
      if (band[i] === type.max) max = true;
    }
  });
  if (!seen[0]) return type.min;
  if (!max) return type.max;
  const free = seen.indexOf(0);
  return free < 0 ? undefined : type.min + free;
}

function imageTags(tags: TagSet, { width, height, bands }: GeoTiffInput, type: SampleType): void {
  const n = bands.length;
  const tilesPerBand = Math.ceil(width / TILE) * Math.ceil(height / TILE);
  tags.long(256, [width]);
  tags.long(257, [height]);
  tags.short(258, Array(n).fill(type.bits));
  tags.short(259, [8]); // Adobe DEFLATE
  tags.short(262, [1]); // BlackIsZero: the bands are values, not colours
  tags.short(277, [n]);
  tags.short(284, [2]); // each band's tiles apart: the planes as given
  tags.short(317, [type.format === 3 ? 3 : 2]); // floating-point or horizontal predictor
  tags.long(322, [TILE]);
  tags.long(323, [TILE]);
  tags.long(324, Array(tilesPerBand * n).fill(0)); // TileOffsets, set by layOut
  tags.long(325, Array(tilesPerBand * n).fill(0)); // TileByteCounts, set by layOut
  if (n > 1) tags.short(338, Array(n - 1).fill(0)); // the bands after the first are unspecified samples
  tags.short(339, Array(n).fill(type.format));
}

/** A north-up grid as scale + tie point (what most readers expect), any other as the full matrix. */
function placeTags(tags: TagSet, t: Affine): void {
  if (t[2] === 0 && t[4] === 0 && t[1] > 0 && t[5] < 0) {
    tags.double(33550, [t[1], -t[5], 0]); // ModelPixelScale
    tags.double(33922, [0, 0, 0, t[0], t[3], 0]); // ModelTiepoint
  } else {
    tags.double(34264, [t[1], t[2], 0, t[0], t[4], t[5], 0, t[3], 0, 0, 0, 0, 0, 0, 0, 1]); // ModelTransformation
  }
}

/** GeoKeys whose values are SHORTs or ASCII; every other key is DOUBLEs (GeoTIFF 1.1, table of keys). */
const SHORT_KEYS = new Set([1024, 1025, 2048, 2050, 2051, 2052, 2054, 2056, 2060, 3072, 3074, 3075, 3076, 4096, 4098, 4099]);
const ASCII_KEYS = new Set([1026, 2049, 3073, 4097]);
const GT_MODEL_TYPE = 1024;
const GT_RASTER_TYPE = 1025;
const PIXEL_IS_AREA = 1;

/** GeoKeyDirectory, with GeoDoubleParams and GeoAsciiParams when keys need them. */
function geoKeyTags(tags: TagSet, crs: GeoTiffCrs): void {
  const keys = new Map<number, unknown>(crs.geoKeys ? copiedKeys(crs.geoKeys) : epsgKeys(crs.epsg));
  keys.set(GT_RASTER_TYPE, PIXEL_IS_AREA); // the geotransform names corners, whatever the source's was
  const directory = [1, 1, 0, keys.size];
  const doubles: number[] = [];
  let ascii = "";
  for (const [id, value] of [...keys].sort(([a], [b]) => a - b)) {
    if (ASCII_KEYS.has(id)) {
      const text = `${String(value)}|`; // GeoTIFF ends each ASCII key with "|"
      directory.push(id, 34737, Buffer.byteLength(text), Buffer.byteLength(ascii));
      ascii += text;
    } else if (SHORT_KEYS.has(id)) {
      if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 0xffff) throw new Error(`encodeGeoTiff: GeoKey ${id} is ${String(value)}`);
      directory.push(id, 0, 1, value);
    } else {
      const values = typeof value === "number" ? [value] : Array.from(value as ArrayLike<number>);
      if (values.length === 0 || !values.every(Number.isFinite)) throw new Error(`encodeGeoTiff: GeoKey ${id} is ${String(value)}`);
      directory.push(id, 34736, values.length, doubles.length);
      doubles.push(...values);
    }
  }
  tags.short(34735, directory);
  if (doubles.length) tags.double(34736, doubles);
  if (ascii) tags.ascii(34737, ascii);
}

/** The keys of an EPSG code: a geographic CRS's or a projected one's, as its definition says. */
function epsgKeys(epsg: number | undefined): [number, unknown][] {
  const crs = epsg === undefined ? undefined : crsOfGeoKeys({ GeographicTypeGeoKey: epsg });
  if (!crs) throw new Error(`encodeGeoTiff: EPSG:${epsg} is not a CRS it knows`);
  const geographic = /\+proj=longlat\b/.test(crs.definition);
  return geographic
    ? [
        [GT_MODEL_TYPE, 2],
        [2048, epsg],
      ]
    : [
        [GT_MODEL_TYPE, 1],
        [3072, epsg],
      ];
}

/** A source's keys by geotiff.js's names, to their ids (names it does not know are left out). */
function copiedKeys(geoKeys: Record<string, unknown>): [number, unknown][] {
  const ids = globals.geoKeys as Record<string, number>;
  return Object.entries(geoKeys).flatMap(([name, value]): [number, unknown][] => (ids[name] !== undefined && value !== null && value !== undefined ? [[ids[name], value]] : []));
}

function gdalMetadata(names: string[]): string {
  const escape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  // Escaped twice, as GDAL writes it: GDAL unescapes an item's text again after parsing the XML.
  const items = names.map((name, b) => `<Item name="DESCRIPTION" sample="${b}" role="description">${escape(escape(name))}</Item>`);
  return `<GDALMetadata>${items.join("")}</GDALMetadata>`;
}

/** Each band's tiles, row by row, band after band (TIFF's order for separate planes), deflated. */
function encodeTiles({ width, height, bands, valid }: GeoTiffInput, type: SampleType, nodata: number | undefined): Buffer[] {
  const tile = type.make(TILE * TILE);
  const bytes = new Uint8Array(tile.buffer);
  const shuffled = type.format === 3 ? new Uint8Array(bytes.length) : undefined;
  const fill = nodata ?? 0;
  const out: Buffer[] = [];
  bands.forEach((band, b) => {
    for (let y0 = 0; y0 < height; y0 += TILE) {
      for (let x0 = 0; x0 < width; x0 += TILE) {
        tile.fill(0);
        const w = Math.min(TILE, width - x0);
        for (let y = 0; y < Math.min(TILE, height - y0); y++) {
          const from = (y0 + y) * width + x0;
          tile.set(band.subarray(from, from + w), y * TILE);
          const v = valid?.[b];
          if (v) for (let x = 0; x < w; x++) if (!v[from + x]) tile[y * TILE + x] = fill;
        }
        out.push(deflateSync(shuffled ? floatPredictor(bytes, shuffled, type.bits / 8) : differenced(tile)));
      }
    }
  });
  return out;
}

/** Predictor 2: each sample minus its left neighbour, in the sample type's own wrap-around. */
function differenced(tile: SamplePlane): Uint8Array {
  for (let row = 0; row < TILE * TILE; row += TILE) for (let i = row + TILE - 1; i > row; i--) tile[i] -= tile[i - 1];
  return toFileOrder(tile);
}

/**
 * Predictor 3 (Adobe's floating-point predictor): each row's samples split into byte planes,
 * most significant first, whatever the file's byte order, then each byte minus its left one.
 */
function floatPredictor(bytes: Uint8Array, out: Uint8Array, size: number): Uint8Array {
  const rowBytes = TILE * size;
  for (let row = 0; row < bytes.length; row += rowBytes) {
    for (let i = 0; i < TILE; i++) {
      for (let k = 0; k < size; k++) out[row + k * TILE + i] = bytes[row + i * size + (LITTLE_ENDIAN ? size - 1 - k : k)];
    }
    for (let i = row + rowBytes - 1; i > row; i--) out[i] -= out[i - 1];
  }
  return out;
}

/** The samples' bytes in the host's order, which the header declares. */
const toFileOrder = (tile: SamplePlane) => new Uint8Array(tile.buffer, tile.byteOffset, tile.byteLength);

/** The internal mask GDAL reads as the dataset's: 1-bit, 1 where valid, tiled like the image. */
function maskImage(width: number, height: number, mask: Uint8Array): { tags: TagSet; tiles: Buffer[] } {
  const tags = new TagSet();
  const across = Math.ceil(width / TILE);
  const count = across * Math.ceil(height / TILE);
  tags.long(254, [4]); // NewSubfileType: a transparency mask
  tags.long(256, [width]);
  tags.long(257, [height]);
  tags.short(258, [1]);
  tags.short(259, [8]);
  tags.short(262, [4]); // transparency mask
  tags.short(277, [1]);
  tags.long(322, [TILE]);
  tags.long(323, [TILE]);
  tags.long(324, Array(count).fill(0));
  tags.long(325, Array(count).fill(0));
  const bits = new Uint8Array((TILE / 8) * TILE);
  const tiles: Buffer[] = [];
  for (let y0 = 0; y0 < height; y0 += TILE) {
    for (let x0 = 0; x0 < width; x0 += TILE) {
      bits.fill(0);
      for (let y = 0; y < Math.min(TILE, height - y0); y++) {
        for (let x = 0; x < Math.min(TILE, width - x0); x++) if (mask[(y0 + y) * width + x0 + x]) bits[y * (TILE / 8) + (x >> 3)] |= 0x80 >> (x & 7);
      }
      tiles.push(deflateSync(bits));
    }
  }
  return { tags, tiles };
}

type TagType = 2 | 3 | 4 | 12; // ASCII, SHORT, LONG, DOUBLE
const TYPE_SIZE: Record<TagType, number> = { 2: 1, 3: 2, 4: 4, 12: 8 };

/** An IFD's entries before they are placed: tag → type and values (an ASCII tag's: its UTF-8 bytes). */
class TagSet {
  readonly entries = new Map<number, { type: TagType; values: number[] }>();
  short = (tag: number, values: number[]) => this.entries.set(tag, { type: 3, values });
  long = (tag: number, values: number[]) => this.entries.set(tag, { type: 4, values });
  double = (tag: number, values: number[]) => this.entries.set(tag, { type: 12, values });
  ascii = (tag: number, text: string) => this.entries.set(tag, { type: 2, values: [...Buffer.from(`${text}\0`, "utf8")] });
}

/**
 * The file: header, each image's IFD and the values that do not fit in their entries, then the
 * tiles. Classic TIFF: an answer past 4 GiB (far beyond what the routes allow) is refused.
 */
function layOut(images: { tags: TagSet; tiles: Buffer[] }[]): Buffer {
  const ifdSize = (tags: TagSet) => {
    let size = 2 + tags.entries.size * 12 + 4;
    for (const { type, values } of tags.entries.values()) {
      const bytes = values.length * TYPE_SIZE[type];
      if (bytes > 4) size += bytes + (bytes % 2);
    }
    return size;
  };
  const ifdAt: number[] = [];
  let at = 8;
  for (const { tags } of images) {
    ifdAt.push(at);
    at += ifdSize(tags);
  }
  for (const { tags, tiles } of images) {
    const offsets = tags.entries.get(324)!.values as number[];
    const counts = tags.entries.get(325)!.values as number[];
    tiles.forEach((t, i) => {
      offsets[i] = at;
      counts[i] = t.length;
      at += t.length;
    });
  }
  if (at > 0xffffffff) throw new Error(`encodeGeoTiff: ${at} bytes is past classic TIFF's 4 GiB`);
  const file = Buffer.alloc(at);
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  file.write(LITTLE_ENDIAN ? "II" : "MM", 0, "latin1");
  view.setUint16(2, 42, LITTLE_ENDIAN);
  view.setUint32(4, ifdAt[0], LITTLE_ENDIAN);
  images.forEach(({ tags }, i) => writeIfd(view, tags, ifdAt[i], ifdAt[i + 1] ?? 0));
  let tileAt = ifdAt[images.length - 1] + ifdSize(images[images.length - 1].tags);
  for (const { tiles } of images) {
    for (const t of tiles) {
      file.set(t, tileAt);
      tileAt += t.length;
    }
    tiles.length = 0; // each tile's memory can go as soon as it is in the file
  }
  return file;
}

/** One IFD at `at`, entries in tag order, its out-of-line values right after it. */
function writeIfd(view: DataView, tags: TagSet, at: number, next: number): void {
  const entries = [...tags.entries].sort(([a], [b]) => a - b);
  view.setUint16(at, entries.length, LITTLE_ENDIAN);
  let valuesAt = at + 2 + entries.length * 12 + 4;
  entries.forEach(([tag, { type, values }], i) => {
    const entry = at + 2 + i * 12;
    const size = values.length * TYPE_SIZE[type];
    view.setUint16(entry, tag, LITTLE_ENDIAN);
    view.setUint16(entry + 2, type, LITTLE_ENDIAN);
    view.setUint32(entry + 4, values.length, LITTLE_ENDIAN);
    let where = entry + 8;
    if (size > 4) {
      view.setUint32(entry + 8, valuesAt, LITTLE_ENDIAN);
      where = valuesAt;
      valuesAt += size + (size % 2);
    }
    values.forEach((v, k) => writeValue(view, type, where + k * TYPE_SIZE[type], v));
  });
  view.setUint32(at + 2 + entries.length * 12, next, LITTLE_ENDIAN);
}

function writeValue(view: DataView, type: TagType, at: number, v: number): void {
  if (type === 2) view.setUint8(at, v);
  else if (type === 3) view.setUint16(at, v, LITTLE_ENDIAN);
  else if (type === 4) view.setUint32(at, v, LITTLE_ENDIAN);
  else view.setFloat64(at, v, LITTLE_ENDIAN);
}
