// Reading a jp2 answer the way a client would, independently of the code that wrote it: its
// boxes walked by their lengths (ISO/IEC 15444-1 Annex I), and its pixels decoded by GDAL's
// OpenJPEG driver (gdal_translate to PNG), since this libvips reads no JPEG 2000.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import sharp from "sharp";

export interface Box {
  type: string;
  contents: Buffer;
}

/** The boxes of `bytes`, in order; throws when a length runs past the end. */
export function boxes(bytes: Buffer): Box[] {
  const out: Box[] = [];
  for (let at = 0; at < bytes.length; ) {
    const length = bytes.readUInt32BE(at);
    if (length < 8 || at + length > bytes.length) throw new Error(`box at ${at} has length ${length} of ${bytes.length - at} bytes left`);
    out.push({ type: bytes.toString("latin1", at + 4, at + 8), contents: bytes.subarray(at + 8, at + length) });
    at += length;
  }
  return out;
}

/** What the jp2 header's image header (ihdr) and colour specification (colr) say. */
export function jp2Header(bytes: Buffer) {
  const header = boxes(bytes).find((b) => b.type === "jp2h");
  if (!header) throw new Error("no jp2h box");
  const inner = boxes(header.contents);
  const ihdr = inner.find((b) => b.type === "ihdr")!.contents;
  const colr = inner.find((b) => b.type === "colr")!.contents;
  return {
    boxes: inner.map((b) => b.type),
    height: ihdr.readUInt32BE(0),
    width: ihdr.readUInt32BE(4),
    components: ihdr.readUInt16BE(8),
    bitsPerComponent: ihdr[10] + 1,
    compression: ihdr[11],
    method: colr[0],
    colourspace: colr.readUInt32BE(3),
  };
}

export interface DecodedPixels {
  data: Buffer;
  width: number;
  height: number;
  channels: number;
}

/** The pixels of a JP2 file as GDAL decodes them. */
export async function gdalDecodeJp2(bytes: Buffer): Promise<DecodedPixels> {
  const dir = await mkdtemp(path.join(tmpdir(), "tessera-jp2-"));
  try {
    await writeFile(path.join(dir, "in.jp2"), bytes);
    await promisify(execFile)("gdal_translate", ["-q", "-of", "PNG", path.join(dir, "in.jp2"), path.join(dir, "out.png")]);
    return rawPixels(await readFile(path.join(dir, "out.png")));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The raw samples of an image sharp reads (a tif answer, GDAL's PNG), greyscale kept one channel. */
export async function rawPixels(bytes: Buffer): Promise<DecodedPixels> {
  const { channels } = await sharp(bytes).metadata();
  // sharp's raw output of a greyscale image is RGB unless told otherwise.
  const img = channels === 1 ? sharp(bytes).toColourspace("b-w") : sharp(bytes);
  const { data, info } = await img.raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

/** Mean and largest absolute difference between two rasters of the same shape. */
export function difference(a: DecodedPixels, b: DecodedPixels): { mean: number; max: number } {
  const shape = (p: DecodedPixels) => `${p.width}x${p.height}x${p.channels}`;
  if (shape(a) !== shape(b)) throw new Error(`shapes differ: ${shape(a)} vs ${shape(b)}`);
  let sum = 0;
  let max = 0;
  for (let i = 0; i < a.data.length; i++) {
    const d = Math.abs(a.data[i] - b.data[i]);
    sum += d;
    max = Math.max(max, d);
  }
  return { mean: sum / a.data.length, max };
}
