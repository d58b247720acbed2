// Output encoders, one per IIIF format: what the renderer hands over is a sharp pipeline of
// the final pixels; each encoder turns it into bytes of its content type.
import PDFDocument from "pdfkit";
import sharp, { type Sharp } from "sharp";
import { unsupported } from "../../shared/errors";
import type { Format } from "../../shared/iiif/image-request";

/** JPEG quality of lossy answers (and of the image inside a PDF). */
const JPEG_QUALITY = 85;
const WEBP_QUALITY = 85;

export interface Encoder {
  contentType: string;
  /** Whether the format keeps alpha (arbitrary rotation shows a transparent background). */
  alpha: boolean;
  encode(img: Sharp): Promise<Buffer>;
}

// No Huffman optimisation: a second entropy pass costing ~40% of a tile's encode for ~5% fewer
// bytes; answers are cached at the edge, so encode time is what matters.
const jpeg = (img: Sharp) => img.jpeg({ quality: JPEG_QUALITY, mozjpeg: false, optimiseCoding: false }).toBuffer();

const ENCODERS: Record<Exclude<Format, "jp2">, Encoder> = {
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
};

/** The encoder of `format`; 501 for a valid format this build cannot write. */
export function encoderFor(format: Format): Encoder {
  if (format === "jp2") {
    throw unsupported("format jp2 is not available: this build's libvips has no JPEG 2000 encoder");
  }
  return ENCODERS[format];
}

async function pdfPage(jpegBytes: Buffer): Promise<Buffer> {
  const { width = 1, height = 1 } = await sharp(jpegBytes).metadata();
  const doc = new PDFDocument({ size: [width, height], margin: 0, autoFirstPage: false, info: { Producer: "Tessera" } });
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
