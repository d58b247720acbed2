// Block codecs registered with geotiff.js, each bounded by the block shape the IFD declares
// (the output of uncompressed, Deflate, LZW, ZSTD and JPEG blocks is bounded). A codec
// never produces, and never allocates, more than the declared block: a decompression bomb or a
// lying header fails that block with a clear 502 instead of exhausting memory.
//
// Fast paths: JPEG through libjpeg-turbo's TurboJPEG API directly (@julusian/jpeg-turbo, on the
// libuv pool, the IFD's JPEGTables merged into each abbreviated tile stream; measured at half
// the time of the same decode through libvips, whose pipeline setup costs as much as the decode
// of a 512² block), WebP through sharp/libwebp, Deflate through node:zlib on the libuv pool,
// except in a render process: there JPEG and Deflate decode synchronously, on the render's
// own thread, so that a full's hundreds of blocks never queue in the libuv pool ahead of tiles;
// ZSTD through zstddec's WASM with the output size fixed up front. LZW and PackBits are small
// bounded decoders here (geotiff.js's grow without limit). LERC is refused (501): its blob
// header sizes its own allocation, and no source here needs it. JPEG 2000 blocks (34712, and
// Aperio's 33003/33005 in YCbCr or RGB) are refused too (501): GDAL writes no such TIFF to
// test a decoder against, and Aperio's YCbCr needs a colour conversion of its own.

import { promisify } from "node:util";
import { inflate as inflateCb, inflateSync } from "node:zlib";
import jpegTurbo from "@julusian/jpeg-turbo";
import { addDecoder, BaseDecoder, getDecoder, type ImageFileDirectory } from "geotiff";
import sharp from "sharp";
import { ZSTDDecoder } from "zstddec";
import { badGateway, HttpError, unsupported } from "../../shared/errors";
import { jpegFrame, mergeJpegTables } from "./jpeg-tables";
import type { Codec } from "../../shared/work";
import { inBackgroundProcess } from "../runtime/priority";

// CommonJS whose exports Node's ESM loader cannot detect statically: take them off the default.
const { decompress, decompressSync, FORMAT_GRAY, FORMAT_RGB } = jpegTurbo;

// In the decoder, off the event loop on the libuv pool; in a render process, on the render's thread.
const onLibuvPool = !inBackgroundProcess();
const inflate = onLibuvPool ? promisify(inflateCb) : async (b: Uint8Array, o: { maxOutputLength: number }) => inflateSync(b, o);
type DecodeOptions = { format: number };
async function decompressJpeg(input: Buffer, into: Buffer | undefined, options: DecodeOptions) {
  if (onLibuvPool) return into ? decompress(input, into, options) : decompress(input, options);
  return into ? decompressSync(input, into, options) : decompressSync(input, options);
}

/** What geotiff.js passes a decoder, plus what the bounds need. */
export interface BlockParameters {
  tileWidth: number;
  tileHeight: number;
  planarConfiguration: number;
  bitsPerSample: number[];
  samplesPerPixel: number;
  predictor: number;
  /** Rows the shortest block has: a tile all of its own, the last strip what is left of the image. */
  minimumRows: number;
  JPEGTables?: Uint8Array;
}

/** SampleFormat of IEEE floating-point samples. */
const SAMPLE_FORMAT_FLOAT = 3;

export const COMPRESSION = {
  none: 1,
  lzw: 5,
  oldJpeg: 6,
  jpeg: 7,
  deflate: 8,
  adobeDeflate: 32946,
  packBits: 32773,
  lerc: 34887,
  zstd: 50000,
  webp: 50001,
  jpeg2000: 34712,
  aperioJpeg2000YCbCr: 33003,
  aperioJpeg2000Rgb: 33005,
};

/** The 501 for a Compression none of the codecs below is registered for, else undefined. */
export function unknownCompression(compression: number | undefined, label: string): HttpError | undefined {
  if (compression === undefined || Object.values(COMPRESSION).includes(compression)) return undefined;
  return unsupported(`this source uses a TIFF compression the decoder does not read (code ${compression})`, `${label}: no codec for Compression ${compression}`);
}

/** The codec a Compression tag names, as the cost model counts its decode (shared/work.ts). */
export function codecOf(compression: number | undefined): Codec {
  switch (compression ?? COMPRESSION.none) {
    case COMPRESSION.jpeg:
      return "jpeg";
    case COMPRESSION.webp:
      return "webp";
    case COMPRESSION.deflate:
    case COMPRESSION.adobeDeflate:
      return "deflate";
    case COMPRESSION.lzw:
      return "lzw";
    case COMPRESSION.zstd:
      return "zstd";
    case COMPRESSION.packBits:
      return "packbits";
    case COMPRESSION.none:
      return "none";
    default:
      return "other";
  }
}

export class BlockTooLargeError extends HttpError {
  constructor(what: string, limit: number) {
    super("bad_gateway", `malformed TIFF: ${what} block decodes to more than the declared ${limit} bytes`);
  }
}

/** A block its codec's library refused: the library's words go to the log, not to the client. */
function corrupt(codec: string, e: unknown): HttpError {
  const message = `malformed TIFF: corrupt ${codec} block`;
  return badGateway(message, `${message} (${(e as Error).message})`);
}

/** Bytes one decoded block must have: rows of the declared width, bit-packed, for one plane. */
export function blockBytes(p: Pick<BlockParameters, "tileWidth" | "tileHeight" | "planarConfiguration" | "bitsPerSample">): number {
  const bitsPerPixel = p.planarConfiguration === 2 ? p.bitsPerSample[0] : p.bitsPerSample.reduce((a, b) => a + b, 0);
  return Math.ceil((p.tileWidth * bitsPerPixel) / 8) * p.tileHeight;
}

export async function blockParameters(dir: ImageFileDirectory): Promise<BlockParameters> {
  const tiled = dir.hasTag("TileWidth");
  const height = (await dir.loadValue("ImageLength")) as number;
  const bits = (await dir.loadValue("BitsPerSample")) as ArrayLike<number> | number | undefined;
  const bitsPerSample = bits === undefined ? [1] : typeof bits === "number" ? [bits] : Array.from(bits);
  const tables = (await dir.loadValue("JPEGTables")) as ArrayLike<number> | undefined;
  const predictor = ((await dir.loadValue("Predictor")) as number) || 1;
  const formats = (await dir.loadValue("SampleFormat")) as ArrayLike<number> | number | undefined;
  const float = (typeof formats === "number" ? formats : formats?.[0]) === SAMPLE_FORMAT_FLOAT;
  // geotiff.js passes a block with an unknown Predictor through undone (wrong pixels); libtiff
  // refuses it. 3 (floating point) is undone only on float samples, as libtiff does.
  if (predictor !== 1 && predictor !== 2 && !(predictor === 3 && float)) {
    throw unsupported(`Predictor ${predictor} is not supported (1, none; 2, horizontal differencing, for integer samples; 3 for floating-point samples)`);
  }
  const tileHeight = tiled ? ((await dir.loadValue("TileLength")) as number) : Math.min(height, ((await dir.loadValue("RowsPerStrip")) as number) || height);
  return {
    tileWidth: (await dir.loadValue(tiled ? "TileWidth" : "ImageWidth")) as number,
    tileHeight,
    planarConfiguration: ((await dir.loadValue("PlanarConfiguration")) as number) || 1,
    bitsPerSample,
    samplesPerPixel: ((await dir.loadValue("SamplesPerPixel")) as number) || 1,
    predictor,
    minimumRows: tiled ? tileHeight : height - (Math.ceil(height / tileHeight) - 1) * tileHeight,
    JPEGTables: tables === undefined ? undefined : Uint8Array.from(tables),
  };
}

/**
 * Throws unless `bytes` is a size a decoded block of `p` may have: whole rows, no more than the
 * declared block, and no fewer than its shortest block (the last strip) has. geotiff.js would
 * read a short block past its end, or take the next block's place for it.
 */
export function checkDecodedSize(codec: string, p: BlockParameters, bytes: number): void {
  const limit = blockBytes(p);
  const row = limit / p.tileHeight;
  if (bytes > limit) throw new BlockTooLargeError(codec, limit);
  if (bytes < row * p.minimumRows || bytes % row !== 0) {
    throw new HttpError("bad_gateway", `malformed TIFF: ${codec} block decodes to ${bytes} bytes, not the declared ${limit} bytes`);
  }
}

/** A block of a geotiff.js raster read, decoded by its registered codec and its size checked (checkDecodedSize). */
export async function decodeRasterBlock(compression: number, p: BlockParameters, stored: ArrayBufferLike): Promise<ArrayBufferLike> {
  const decoder = await getDecoder(compression, p as never);
  const decoded = await decoder.decode(stored);
  checkDecodedSize(decoder instanceof BoundedDecoder ? decoder.name : `compression ${compression}`, p, decoded.byteLength);
  return decoded;
}

/** Base of every codec here: decodeBlock gets the byte bound, decode() checks the result. */
abstract class BoundedDecoder extends BaseDecoder {
  declare parameters: BlockParameters;
  abstract readonly name: string;

  protected get limit(): number {
    return blockBytes(this.parameters);
  }

  override async decode(buffer: ArrayBufferLike): Promise<ArrayBufferLike> {
    const out = await super.decode(buffer);
    if (out.byteLength > this.limit) throw new BlockTooLargeError(this.name, this.limit);
    return out;
  }
}

class RawDecoder extends BoundedDecoder {
  readonly name = "uncompressed";
  decodeBlock(buffer: ArrayBuffer): ArrayBuffer {
    if (buffer.byteLength > this.limit) throw new BlockTooLargeError(this.name, this.limit);
    return buffer;
  }
}

class DeflateDecoder extends BoundedDecoder {
  readonly name = "Deflate";
  async decodeBlock(buffer: ArrayBuffer): Promise<ArrayBuffer> {
    try {
      // maxOutputLength stops zlib itself at the bound: a bomb never gets its buffer.
      const out = await inflate(new Uint8Array(buffer), { maxOutputLength: this.limit });
      return toArrayBuffer(out);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw new BlockTooLargeError(this.name, this.limit);
      throw corrupt(this.name, e);
    }
  }
}

class LzwDecoder extends BoundedDecoder {
  readonly name = "LZW";
  decodeBlock(buffer: ArrayBuffer): ArrayBuffer {
    return decodeLzw(new Uint8Array(buffer), this.limit).buffer as ArrayBuffer;
  }
}

class PackBitsDecoder extends BoundedDecoder {
  readonly name = "PackBits";
  decodeBlock(buffer: ArrayBuffer): ArrayBuffer {
    const src = new Uint8Array(buffer);
    const out = new Uint8Array(this.limit);
    let o = 0;
    for (let i = 0; i < src.length; ) {
      const header = (src[i++] << 24) >> 24;
      if (header === -128) continue;
      const n = header >= 0 ? header + 1 : 1 - header;
      if (o + n > out.length) throw new BlockTooLargeError(this.name, this.limit);
      if (header >= 0) out.set(src.subarray(i, i + n), o), (i += n);
      else out.fill(src[i++], o, o + n);
      o += n;
    }
    return out.buffer.slice(0, o);
  }
}

const zstd = new ZSTDDecoder();
class ZstdDecoder extends BoundedDecoder {
  readonly name = "ZSTD";
  decodeBlock(buffer: ArrayBuffer): ArrayBuffer {
    // With the size given, zstddec allocates exactly the bound and ZSTD stops there.
    const out = zstd.decode(new Uint8Array(buffer), this.limit);
    return toArrayBuffer(out);
  }
}

/** WebP blocks through libvips; the declared size is enforced before decoding. */
class WebpDecoder extends BoundedDecoder {
  readonly name = "WebP";
  async decodeBlock(buffer: ArrayBuffer): Promise<ArrayBuffer> {
    const { tileWidth, tileHeight, samplesPerPixel } = this.parameters;
    const img = sharp(new Uint8Array(buffer), { limitInputPixels: tileWidth * tileHeight, failOn: "error" });
    let decoded;
    try {
      // WebP decodes to RGB or RGBA; match the channels the IFD declares.
      decoded = await (samplesPerPixel === 4 ? img.ensureAlpha() : img.removeAlpha()).raw().toBuffer({ resolveWithObject: true });
    } catch (e) {
      if (/exceeds pixel limit/i.test((e as Error).message)) throw new BlockTooLargeError(this.name, this.limit);
      throw corrupt(this.name, e);
    }
    checkShape(this.name, this.parameters, decoded.info);
    return toArrayBuffer(decoded.data);
  }
}

/** JPEG blocks through TurboJPEG, which allocates what the frame header says: checked first. */
class JpegDecoder extends BoundedDecoder {
  readonly name = "JPEG";
  async decodeBlock(buffer: ArrayBuffer): Promise<ArrayBuffer> {
    return toArrayBuffer(await decodeJpegBlock(new Uint8Array(buffer), this.parameters));
  }
}

const MULTI_SCAN_REFUSAL =
  "progressive or multi-scan JPEG blocks are not supported: their decode holds every coefficient of the block at once (TIFF's JPEG blocks are baseline, in one scan, as libtiff and GDAL write them)";

/**
 * Merged streams (tile + JPEGTables) being decoded, reused: a block's merged stream is as large
 * as the tile, and a new one per block was garbage for V8 to count and collect.
 */
const mergeSpares: Uint8Array[] = [];
const MAX_MERGE_SPARES = 4;

/**
 * One stored JPEG block decoded by TurboJPEG, into `into` when given (at least the declared
 * block's bytes; what it returns is then a view of it). The frame must declare exactly the
 * block's shape before TurboJPEG allocates or writes anything.
 */
export async function decodeJpegBlock(stored: Uint8Array, params: BlockParameters, into?: Uint8Array): Promise<Uint8Array> {
  const tables = params.JPEGTables;
  const scratch = mergeScratch(stored.length + (tables?.length ?? 0));
  const jpeg = mergeJpegTables(stored, tables, scratch);
  try {
    const frame = jpegFrame(jpeg);
    if (!frame) throw new HttpError("bad_gateway", "malformed TIFF: JPEG block has no frame header");
    checkShape("JPEG", params, { width: frame.width, height: frame.height, channels: frame.components });
    if (frame.components !== 1 && frame.components !== 3) {
      throw unsupported(`JPEG blocks with ${frame.components} components are not supported`);
    }
    // Its estimate counts a block decoded a row of MCUs at a time.
    if (!frame.onePass) throw unsupported(MULTI_SCAN_REFUSAL);
    let decoded;
    try {
      const input = Buffer.from(jpeg.buffer, jpeg.byteOffset, jpeg.byteLength);
      const options = { format: frame.components === 1 ? FORMAT_GRAY : FORMAT_RGB };
      decoded = await decompressJpeg(input, into && Buffer.from(into.buffer, into.byteOffset, into.byteLength), options);
    } catch (e) {
      throw corrupt("JPEG", e);
    }
    checkShape("JPEG", params, { width: decoded.width, height: decoded.height, channels: frame.components });
    return decoded.data;
  } finally {
    if (mergeSpares.length < MAX_MERGE_SPARES) mergeSpares.push(scratch);
  }
}

/** Room for a merged stream of up to `bytes`: a spare, or a new one with headroom for larger tiles. */
function mergeScratch(bytes: number): Uint8Array {
  const i = mergeSpares.findIndex((b) => b.length >= bytes);
  return i >= 0 ? mergeSpares.splice(i, 1)[0] : new Uint8Array(Math.ceil(bytes * 1.25));
}

/** A decoded block must be the declared width and samples; strips may be shorter at the bottom. */
function checkShape(name: string, p: BlockParameters, got: { width: number; height: number; channels: number }): void {
  if (got.width !== p.tileWidth || got.height > p.tileHeight || got.channels !== p.samplesPerPixel) {
    throw new HttpError(
      "bad_gateway",
      `malformed TIFF: ${name} block is ${got.width}x${got.height}x${got.channels}, declared ${p.tileWidth}x${p.tileHeight}x${p.samplesPerPixel}`,
    );
  }
}

/**
 * Bounded TIFF LZW (MSB-first codes of 9–12 bits, ClearCode 256, EOI 257, "early change"
 * widening as libtiff writes it). Output stops at `limit` bytes.
 */
export function decodeLzw(src: Uint8Array, limit: number): Uint8Array {
  const prefix = new Int16Array(4096);
  const suffix = new Uint8Array(4096);
  const length = new Uint16Array(4096);
  for (let i = 0; i < 256; i++) (prefix[i] = -1), (suffix[i] = i), (length[i] = 1);
  const out = new Uint8Array(limit);
  const totalBits = src.length * 8;
  let bit = 0;
  let width = 9;
  let next = 258;
  let prev = -1;
  let o = 0;
  const emit = (code: number) => {
    const n = length[code];
    if (o + n > limit) throw new BlockTooLargeError("LZW", limit);
    for (let c = code, p = o + n - 1; c >= 0; c = prefix[c]) out[p--] = suffix[c];
    o += n;
  };
  while (bit + width <= totalBits) {
    const byte = bit >>> 3;
    const word = (src[byte] << 16) | ((src[byte + 1] ?? 0) << 8) | (src[byte + 2] ?? 0);
    const code = (word >>> (24 - (bit & 7) - width)) & ((1 << width) - 1);
    bit += width;
    if (code === 257) break;
    if (code === 256) {
      width = 9;
      next = 258;
      prev = -1;
      continue;
    }
    if (prev === -1) {
      if (code > 255) throw new HttpError("bad_gateway", "malformed TIFF: corrupt LZW block");
      emit(code);
      prev = code;
      continue;
    }
    let first: number;
    if (code < next) {
      const start = o;
      emit(code);
      first = out[start];
    } else if (code === next) {
      const start = o;
      emit(prev);
      first = out[start];
      if (o + 1 > limit) throw new BlockTooLargeError("LZW", limit);
      out[o++] = first;
    } else {
      throw new HttpError("bad_gateway", "malformed TIFF: corrupt LZW block");
    }
    if (next < 4096) {
      prefix[next] = prev;
      suffix[next] = first;
      length[next] = length[prev] + 1;
      next++;
    }
    if (next + 1 >= 1 << width && width < 12) width++;
    prev = code;
  }
  return out.slice(0, o);
}

function toArrayBuffer(b: Uint8Array): ArrayBuffer {
  if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer) return b.buffer;
  // A copy of the view alone: a Node Buffer's own slice() shares its (larger, pooled) memory.
  return Uint8Array.prototype.slice.call(b).buffer as ArrayBuffer;
}

type DecoderClass = Parameters<typeof addDecoder>[1] extends () => Promise<infer C> ? C : never;
const register = (cases: number | (number | undefined)[], decoder: unknown, preferWorker = false) =>
  addDecoder(cases, async () => decoder as DecoderClass, blockParameters as never, preferWorker);

let registered: Promise<void> | undefined;

/** Replaces geotiff.js's codecs with the bounded ones above (idempotent). */
export function registerCodecs(): Promise<void> {
  return (registered ??= (async () => {
    await zstd.init();
    register([undefined, COMPRESSION.none], RawDecoder);
    register(COMPRESSION.lzw, LzwDecoder);
    register([COMPRESSION.deflate, COMPRESSION.adobeDeflate], DeflateDecoder);
    register(COMPRESSION.packBits, PackBitsDecoder);
    register(COMPRESSION.zstd, ZstdDecoder);
    register(COMPRESSION.jpeg, JpegDecoder);
    register(COMPRESSION.webp, WebpDecoder);
    addDecoder(COMPRESSION.lerc, () => Promise.reject(unsupported("LERC-compressed sources are not supported")));
    addDecoder([COMPRESSION.jpeg2000, COMPRESSION.aperioJpeg2000YCbCr, COMPRESSION.aperioJpeg2000Rgb], () =>
      Promise.reject(unsupported("JPEG 2000-compressed sources are not supported (rewrite them with DEFLATE, ZSTD, JPEG or WEBP)")),
    );
    addDecoder(COMPRESSION.oldJpeg, () => Promise.reject(unsupported("old-style JPEG (compression 6) is not supported")));
  })());
}
