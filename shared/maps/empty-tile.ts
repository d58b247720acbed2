// The answer to a tile outside a source's bounds, whatever format was asked for: a fully
// transparent PNG. Transparent, so the layers below a map layer show through where an opaque
// (JPEG) tile would hide them; a 200 with an image, since MapLibre, Leaflet and OpenLayers
// report a 404 or an empty body as a failed tile. Constant bytes, so the edge answers it
// without a decode: 8-bit RGBA, every pixel (0, 0, 0, 0), as sharp writes it at compression 9.
import type { TileRequest } from "./tile-request";

const BASE64: Record<TileRequest["scale"], string> = {
  1:
    "iVBORw0KGgoAAAANSUhEUgAAAQAAAAEACAYAAABccqhmAAAACXBIWXMAAAPoAAAD6AG1e1JrAAABFUlEQVR42u3BMQEAAADCoPVP7WsIo" +
    "A".repeat(339) +
    "eAMBPAAB2ClDBAAAAABJRU5ErkJggg==",
  2:
    "iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6AAAACXBIWXMAAAPoAAAD6AG1e1JrAAAED0lEQVR42u3BMQEAAADCoPVPbQdvo" +
    "A".repeat(1355) +
    "4DcC8AABL9rASwAAAABJRU5ErkJggg==",
};

const bytes = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));

/** The transparent PNG for a tile of this scale (256² at 1, 512² at 2). */
export const EMPTY_TILES: Record<TileRequest["scale"], Uint8Array> = { 1: bytes(BASE64[1]), 2: bytes(BASE64[2]) };
