// Output encoders, one per IIIF format: what the renderer hands over is a sharp pipeline of
// the final pixels; each encoder turns it into bytes of its content type.
import PDFDocument from "pdfkit";
import sharp, { type Sharp } from "sharp";
import type { Format, Quality } from "../../shared/iiif/image-request";
import { jp2File } from "./jp2";
import { encodeJ2k } from "./openjpeg";

/** JPEG quality of lossy answers (and of the image inside a PDF). */
const JPEG_QUALITY = 85;
const WEBP_QUALITY = 85;

export interface Encoder {
  contentType: string;
  /** Whether the format keeps alpha (arbitrary rotation shows a transparent background). */
  alpha: boolean;
  /**
   * `quality` is the request's IIIF quality, for encoders that code some losslessly; `signal`
   * ends a long encode early (jp2's, between tiles) once the request is cancelled.
   */
  encode(img: Sharp, quality?: Quality, signal?: AbortSignal): Promise<Buffer>;
}

// No Huffman optimisation: a second entropy pass costing ~40% of a tile's encode for ~5% fewer
// bytes; answers are cached at the edge, so encode time is what matters.
const jpeg = (img: Sharp) => img.jpeg({ quality: JPEG_QUALITY, mozjpeg: false, optimiseCoding: false }).toBuffer();

/**
 * JPEG 2000 in the JP2 file format, 8-bit grey or sRGB without alpha (like jpg): lossy at
 * openjpeg-worker.ts's LOSSY_RATIO, except gray and bitonal answers, coded losslessly, since
 * the 9/7 wavelet's ringing shows on a bitonal image's edges and single-channel answers are a
 * third the size.
 */
async function jp2(img: Sharp, quality: Quality = "default", signal?: AbortSignal): Promise<Buffer> {
  const { data, info } = await img.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const image = { width: info.width, height: info.height, components: info.channels === 1 ? 1 : 3 } as const;
  const lossless = quality === "gray" || quality === "bitonal";
  return jp2File(await encodeJ2k({ pixels: data, ...image, lossless }, signal), image);
}

const ENCODERS: Record<Format, Encoder> = {
  jpg: { contentType: "image/jpeg", alpha: false, encode: jpeg },
  png: { contentType: "image/png", alpha: true, encode: (img) => img.png().toBuffer() },
  webp: { contentType: "image/webp", alpha: true, encode: (img) => img.webp({ quality: WEBP_QUALITY }).toBuffer() },
  tif: { contentType: "image/tiff", alpha: false, encode: (img) => img.tiff({ compression: "lzw" }).toBuffer() },
  gif: { contentType: "image/gif", alpha: false, encode: (img) => img.gif().toBuffer() },
  pdf: {
    contentType: "application/pdf",
    alpha: false,
    // One page exactly the image's size (1 px = 1 pt), the image as JPEG inside.
    encode: async (img) => pdfPage(await jpeg(img)),
  },
  jp2: { contentType: "image/jp2", alpha: false, encode: jp2 },
};

/** The encoder of `format`. */
export function encoderFor(format: Format): Encoder {
  return ENCODERS[format];
}

async function pdfPage(jpegBytes: Buffer): Promise<Buffer> {
  const { width = 1, height = 1 } = await sharp(jpegBytes).metadata();
  // No default font (pdfkit's is Helvetica): the page is one image, and a standard font's metrics
  // are read from a file beside pdfkit's own, which the decoder's bundle does not carry.
  const doc = new PDFDocument({ size: [width, height], margin: 0, autoFirstPage: false, font: "", info: { Producer: "Tessera" } });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on("data", (c: Buffer) => chunks.push(c));
    doc.on("end", () => resolve(Buffer.concat(chunks)));
    doc.on("error", reject);
  });
  doc.addPage({ size: [width, height], margin: 0 });
  doc.image(jpegBytes, 0, 0, { width, height });
  doc.end();
  return done;
}
