// The JP2 file format (ISO/IEC 15444-1 Annex I) around a raw JPEG 2000 codestream: IIIF's
// `jp2` is `image/jp2`, a file of boxes, while the encoder writes a bare codestream (FF4F FF51 …).
// Only the boxes a conforming reader requires: signature (I.5.1), file type (I.5.2), the JP2
// header superbox (I.5.3) with its image header (I.5.3.1) and colour specification (I.5.3.3),
// then the contiguous codestream (I.5.4).

/** What the header boxes state of the codestream's image: 8-bit unsigned components. */
export interface Jp2Image {
  width: number;
  height: number;
  /** 1 (greyscale) or 3 (sRGB). */
  components: 1 | 3;
}

/** Enumerated colourspaces of the colour specification box (Table I.10). */
const SRGB = 16;
const GREYSCALE = 17;
/** Compression type 7: the image is coded with JPEG 2000 (I.5.3.1). */
const JPEG2000_CODING = 7;
/** Largest box length in the 32-bit LBox field; longer boxes need the XLBox form, never needed here. */
const MAX_BOX_BYTES = 0xffff_ffff;

/** The JP2 file of `codestream` (its pieces, in order), an 8-bit codestream of `image`, written once. */
export function jp2File(codestream: readonly Uint8Array[], image: Jp2Image): Buffer {
  const codestreamBytes = codestream.reduce((sum, piece) => sum + piece.length, 0);
  return Buffer.concat([
    box("jP  ", Buffer.from([0x0d, 0x0a, 0x87, 0x0a])),
    box("ftyp", Buffer.concat([ascii("jp2 "), u32(0), ascii("jp2 ")])),
    box("jp2h", Buffer.concat([imageHeader(image), colourSpecification(image)])),
    boxHeader("jp2c", codestreamBytes),
    ...codestream,
  ]);
}

/** ihdr: height, width, components, bits per component − 1, compression, UnkC 0, IPR 0. */
function imageHeader({ width, height, components }: Jp2Image): Buffer {
  return box("ihdr", Buffer.concat([u32(height), u32(width), u16(components), Buffer.from([8 - 1, JPEG2000_CODING, 0, 0])]));
}

/** colr: method 1 (enumerated colourspace), precedence 0, approximation 0. */
function colourSpecification({ components }: Jp2Image): Buffer {
  return box("colr", Buffer.concat([Buffer.from([1, 0, 0]), u32(components === 1 ? GREYSCALE : SRGB)]));
}

/** A box: its header, then its contents. */
function box(type: string, contents: Uint8Array): Buffer {
  return Buffer.concat([boxHeader(type, contents.length), contents]);
}

/** A box's header: its length (header included) and its four-character type. */
function boxHeader(type: string, contentBytes: number): Buffer {
  const length = 8 + contentBytes;
  if (length > MAX_BOX_BYTES) throw new Error(`a ${type} box of ${length} bytes needs the XLBox form`);
  return Buffer.concat([u32(length), ascii(type)]);
}

const ascii = (text: string) => Buffer.from(text, "latin1");

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}
