// A mosaic's tile on the decoder: the assets the tile paints (413 past the configured most), each
// leased from the members' cache (zero prefetch, pinned to one snapshot while cached), then one
// composed decode over all of them. The members stay leased until the decode has run, so the
// request's one reservation, permit and deadline cover every child read.
import { badGateway, HttpError } from "../../shared/errors";
import { EMPTY_TILES } from "../../shared/maps/empty-tile";
import type { StyleFields } from "../../shared/maps/style";
import { canonicalTile, type TileRequest } from "../../shared/maps/tile-request";
import type { Cog } from "../cog/cog";
import type { CogCache } from "../cog/cog-cache";
import { byBandNumber, cogAsset, composeTile, type BandChoice, type TileAsset } from "../maps/compose-tile";
import type { PreparedDecode } from "../render/prepared-decode";
import { assetLabel } from "../source/assets";
import type { AssetRef, Mosaic } from "./mosaic";

/** Members a tile opens at once. */
const OPENS_AT_ONCE = 4;

/** Most assets a mosaic tile may paint (TESSERA_MOSAIC_MAX_ASSETS). */
export const DEFAULT_MOSAIC_MAX_ASSETS = 32;

export interface MosaicTileOptions {
  members: CogCache<Cog>;
  maxAssets: number;
}

/** Runs `decode` on the prepared tile of `mosaic`, its members held open until it settles. */
export async function withMosaicTile<R>(
  mosaic: Mosaic,
  id: string,
  req: TileRequest,
  options: MosaicTileOptions,
  signal: AbortSignal,
  decode: (prepared: PreparedDecode) => Promise<R>,
): Promise<R> {
  const what = `${id} ${canonicalTile(req)}`;
  const refs = mosaic.index.assetsFor(req);
  if (refs.length === 0) return decode(emptyTile(req, what));
  return withMosaicAssets(id, refs, req, `tile ${canonicalTile(req)}`, options, signal, async (assets) => decode(await composeTile(assets, req, what, signal)));
}

/**
 * Runs `use` on the assets `refs` name (413 past the configured most: `what` says what paints
 * them), each leased from the members' cache until it settles, with the bands `style` reads.
 */
export async function withMosaicAssets<R>(
  id: string,
  refs: AssetRef[],
  style: StyleFields,
  what: string,
  options: MosaicTileOptions,
  signal: AbortSignal,
  use: (assets: TileAsset[]) => Promise<R>,
): Promise<R> {
  if (refs.length > options.maxAssets) {
    throw new HttpError("too_large", `${what} of mosaic "${id}" paints ${refs.length} assets, more than the ${options.maxAssets} a request may`);
  }
  return withLeasedAssets(id, refs, style, options, signal, use);
}

/**
 * Runs `use` on the assets `refs` name (bands chosen by `req`), each member leased from the
 * members' cache until it settles, so a request's one reservation, permit and deadline cover
 * every child read.
 */
export async function withLeasedAssets<R>(
  id: string,
  refs: AssetRef[],
  req: BandChoice,
  options: MosaicTileOptions,
  signal: AbortSignal,
  use: (assets: TileAsset[]) => Promise<R>,
): Promise<R> {
  const leases = new Map<string, Awaited<ReturnType<CogCache<Cog>["lease"]>>>();
  try {
    const assets = [...new Set(refs.flatMap((r) => (r.kind === "cog" ? [r.asset] : r.bands.map((b) => b.asset))))];
    // A few at a time: a first tile over many members is not one store round trip per member in
    // turn, and the opens leave the store's connections to other requests' reads.
    for (let i = 0; i < assets.length; i += OPENS_AT_ONCE) {
      const batch = assets.slice(i, i + OPENS_AT_ONCE);
      const opened = await Promise.allSettled(batch.map((asset) => options.members.lease(asset, undefined, signal)));
      opened.forEach((o, j) => o.status === "fulfilled" && leases.set(batch[j], o.value));
      const failed = opened.find((o) => o.status === "rejected");
      if (failed) throw failed.reason;
    }
    const cogOf = (asset: string) => {
      const cog = leases.get(asset)!.opened;
      if (!cog.geo) throw badGateway(`mosaic "${id}": an asset is not georeferenced`, `mosaic "${id}": asset ${assetLabel(asset)} is not georeferenced`);
      return cog;
    };
    return await use(refs.map((r) => tileAsset(r, req, cogOf)));
  } finally {
    for (const lease of leases.values()) lease.release();
  }
}

function tileAsset(ref: AssetRef, req: BandChoice, cogOf: (asset: string) => Cog): TileAsset {
  if (ref.kind === "cog") return cogAsset(cogOf(ref.asset), req, assetLabel(ref.asset));
  const bands = ref.bands.map((b) => ({ name: b.name, cog: cogOf(b.asset), band: b.band }));
  return { label: ref.label, bands: [...bands].sort((a, b) => byBandNumber(a.name, b.name)), channels: bands.map((b) => b.name) };
}

/** Where the index names no asset: the transparent tile, as outside the data. */
function emptyTile(req: TileRequest, what: string): PreparedDecode {
  const body = Buffer.from(EMPTY_TILES[req.scale]);
  return { cost: { bytes: body.length, work: 0 }, what, workHelp: "", render: async () => ({ body, contentType: "image/png" }) };
}
