// MosaicJSON 0.0.3: a document naming, for each web-mercator quadkey at one zoom (the index's),
// the assets (COGs) to paint there, first listed painted first. Both tiers read it: the decoder
// to choose a tile's assets, the edge to count them for admission. The document comes from a
// publisher's bucket, so it is validated as an attacker might write it: every failure is a 400
// naming the field, never a crash or an unbounded amount of work.
import { badRequest } from "../errors";

/** The finest zoom a MosaicJSON document may name (quadkeys of at most 30 digits). */
export const MAX_MOSAIC_ZOOM = 30;

// ---------------------------------------------------------------------------------------------
// Quadkeys (Bing Maps Tile System): one digit a zoom, coarsest first, each digit 2·(y bit) + (x bit).
// A tile's descendants are exactly the quadkeys it prefixes, which is what makes the index sortable.

/** The quadkey of web-mercator tile z/x/y; 400 outside the matrix. */
export function tileToQuadkey(z: number, x: number, y: number): string {
  if (!Number.isInteger(z) || z < 0 || z > MAX_MOSAIC_ZOOM) throw badRequest(`tile zoom ${z} is not a whole number in 0–${MAX_MOSAIC_ZOOM}`);
  const size = 2 ** z;
  if (!Number.isInteger(x) || x < 0 || x >= size) throw badRequest(`tile x ${x} is outside zoom ${z} (0–${size - 1})`);
  if (!Number.isInteger(y) || y < 0 || y >= size) throw badRequest(`tile y ${y} is outside zoom ${z} (0–${size - 1})`);
  let key = "";
  // Arithmetic, not bit operators: x and y reach 2^30 - 1, past which 32-bit operators go wrong.
  for (let bit = size / 2; bit >= 1; bit /= 2) {
    key += String((Math.floor(y / bit) % 2) * 2 + (Math.floor(x / bit) % 2));
  }
  return key;
}

/** The tile a quadkey names; 400 for a key of other digits than 0–3 or longer than 30. */
export function quadkeyToTile(quadkey: string): { z: number; x: number; y: number } {
  if (!isQuadkey(quadkey)) throw badRequest(`quadkey ${quoted(quadkey)} is not 0–${MAX_MOSAIC_ZOOM} digits of 0–3`);
  let x = 0;
  let y = 0;
  for (const digit of quadkey) {
    const d = Number(digit);
    x = x * 2 + (d % 2);
    y = y * 2 + Math.floor(d / 2);
  }
  return { z: quadkey.length, x, y };
}

const isQuadkey = (s: string) => s.length <= MAX_MOSAIC_ZOOM && /^[0-3]*$/.test(s);

/** A string from the document, safe to put in a message: JSON-quoted and cut short. */
function quoted(s: string): string {
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);
}
