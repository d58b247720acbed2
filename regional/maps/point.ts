// The values at one point of a COG or a mosaic's assets, as titiler's /point answers them. The
// point is placed in each asset's full-resolution pixels and the pixel holding it is read (the
// floor of its pixel coordinate, as gdallocationinfo picks it): a 1 × 1 window, so one stored
// block an asset. Then as a tile's pixel: an asset's tuple (its bands, or its expression's
// channels), the assets reduced by pixel selection, nodata and masked values null.
import { badRequest, notFound } from "../../shared/errors";
import { formatExpressions, parseExpressions, type BandPlane, type ExpressionProgram } from "../../shared/maps/expression";
import { pointCost } from "../../shared/maps/tile-cost";
import { DEFAULT_COORD_CRS, type PointRequest } from "../../shared/maps/point-request";
import type { Cog, LevelWindow } from "../cog/cog";
import { readBands } from "../cog/bands";
import { intoSourceRange } from "../cog/georeference";
import type { PreparedDecode } from "../render/prepared-decode";
import { Slices } from "../runtime/slices";
import type { Reservation } from "../runtime/work-budget";
import { afterReduction, channels, checkSameBands, tupleOf, type AssetBand, type TileAsset } from "./compose-tile";
import { conversion, crsOfName, LON_LAT } from "./crs";
import { pixelSelection, type AssetTuple } from "./pixel-selection";
import { applyAffine, invertAffine } from "./transformer";
import { checkBands, plannedShape } from "./warp";

/** Values of one asset, or the reduced ones: null where nodata, masked or an invalid result. */
export interface PointValues {
  values: (number | null)[];
  band_names: string[];
}

/** titiler's answer: the chosen values, and for a mosaic each asset's that holds the point. */
export interface PointAnswer extends PointValues {
  coordinates: [number, number];
  assets?: ({ name: string } & PointValues)[];
}

/** The full-level pixel [column, row] of `cog` holding the point, or undefined outside it. */
export function pixelOf(cog: Cog, req: Pick<PointRequest, "x" | "y" | "coordCrs">): [number, number] | undefined {
  const geo = cog.geo!;
  const [x, y] = intoSourceRange(geo, conversion(coordinateDefinition(req), geo.crs.definition))(req.x, req.y);
  const [column, row] = applyAffine(invertAffine(geo.pixelToCrs), x, y).map(Math.floor);
  const { width, height } = cog.levels[0];
  return column >= 0 && row >= 0 && column < width && row < height ? [column, row] : undefined;
}

/** The PROJ definition of the point's coord_crs; 400 for a code the bundled tables lack. */
export function coordinateDefinition({ coordCrs: name }: Pick<PointRequest, "coordCrs">): string {
  if (name === DEFAULT_COORD_CRS) return LON_LAT;
  const crs = crsOfName(name);
  if (!crs) throw badRequest(`coord_crs ${name} is not a CRS the EPSG tables define`);
  if (crs.unitScale[0] !== 1 || crs.unitScale[1] !== 1) throw badRequest(`coord_crs ${name}: CRSs in units other than metres or degrees are not supported`);
  return crs.definition;
}

/** One COG's pixel read of an asset: the bands it brings from that COG. */
interface PixelRead {
  cog: Cog;
  bands: AssetBand[];
  pixel: [number, number];
}

/**
 * The point's decode over `assets` (in paint order), costed as one block an asset that holds it.
 * 404 when none does. `mosaic`: answer each asset's values too, under its label.
 */
export function preparePoint(assets: TileAsset[], req: PointRequest, what: string, mosaic: boolean): PreparedDecode {
  const holding = assets.flatMap((asset) => {
    const reads = pixelReads(asset, req);
    return reads ? [{ asset, reads }] : [];
  });
  if (holding.length === 0) throw notFound(`point (${req.x}, ${req.y}) is outside the data`);
  checkSameBands(holding.map(({ asset }) => asset));
  const shapes = holding.flatMap(({ reads }) => reads.map((r) => plannedShape(r.cog, { bands: r.bands.map((b) => b.band), read: { level: 0, window: window(r.pixel) } })));
  const program = req.expression ? parseExpressions(req.expression, holding[0].asset.bands.map((b) => b.name)) : undefined;
  const render = async (signal: AbortSignal, work: Reservation) => {
    const answer = await pointValues(holding, req, program, mosaic, new Slices(signal), work);
    return { body: Buffer.from(JSON.stringify(answer)), contentType: "application/json" };
  };
  return { cost: pointCost(shapes), what, workHelp: "use fewer assets", render };
}

/** Where each COG of the asset holds the point; undefined when one of them does not. */
function pixelReads(asset: TileAsset, req: PointRequest): PixelRead[] | undefined {
  const byCog = new Map<Cog, AssetBand[]>();
  for (const band of asset.bands) byCog.set(band.cog, [...(byCog.get(band.cog) ?? []), band]);
  const reads: PixelRead[] = [];
  for (const [cog, bands] of byCog) {
    checkBands(cog, bands.map((b) => b.band));
    const pixel = pixelOf(cog, req);
    if (!pixel) return undefined;
    reads.push({ cog, bands, pixel });
  }
  return reads;
}

const window = ([column, row]: [number, number]): LevelWindow => [column, row, column + 1, row + 1];

async function pointValues(
  holding: { asset: TileAsset; reads: PixelRead[] }[],
  req: PointRequest,
  program: ExpressionProgram | undefined,
  mosaic: boolean,
  slices: Slices,
  work: Reservation,
): Promise<PointAnswer> {
  const stage = req.stage ?? "after_channels";
  const mode = req.pixelSelection ?? "first";
  const first = holding[0].asset;
  const tuples: AssetTuple[] = [];
  const perAsset: ({ name: string } & PointValues)[] = [];
  for (const { asset, reads } of holding) {
    const planes = await readPixel(reads, req, slices, work);
    const tuple = stage === "before_channels" ? tupleOf(asset.bands.map((b) => planes.get(b.name)!)) : await channels(program, asset, planes, 1, slices);
    tuples.push(tuple);
    // An asset's own values are its channels, whatever the stage.
    const own = stage === "before_channels" ? await channels(program, asset, planes, 1, slices) : tuple;
    perAsset.push({ name: asset.label, ...valuesOf(own, channelNames(program, asset, "first", own.bands.length)) });
  }
  const components = tuples[0].bands.length;
  const reducer = pixelSelection({ mode, rankChannel: req.rankChannel, components, pixels: 1 }, slices);
  for (const tuple of tuples) if (!reducer.done) await reducer.add(tuple);
  const reduced = await reducer.result();
  const out = stage === "before_channels" ? await afterReduction(program, req, first, reduced, 1, slices) : reduced;
  const chosen = valuesOf(out, channelNames(program, first, mode, out.bands.length));
  return { coordinates: [req.x, req.y], ...chosen, ...(mosaic && { assets: perAsset }) };
}

/** The pixel of every band the asset brings, by name. */
async function readPixel(reads: PixelRead[], req: PointRequest, slices: Slices, work: Reservation): Promise<Map<string, BandPlane>> {
  const planes = new Map<string, BandPlane>();
  for (const { cog, bands, pixel } of reads) {
    const read = await readBands(cog, 0, window(pixel), bands.map((b) => b.band), req.nodata, slices.signal, work);
    bands.forEach((b, i) => planes.set(b.name, { values: Float32Array.from(read[i].values), valid: read[i].valid }));
  }
  return planes;
}

/**
 * Names of the answer's values: an expression's channel texts (as titiler names them), else the
 * bands shown; `count` is one value; lastband* drops its deciding band.
 */
function channelNames(program: ExpressionProgram | undefined, asset: TileAsset, mode: string, count: number): string[] {
  if (mode === "count") return ["count"];
  const names = program ? program.channels.map((node) => formatExpressions({ channels: [node] })) : asset.channels;
  return names.slice(0, count);
}

function valuesOf(tuple: AssetTuple, names: string[]): PointValues {
  return { values: tuple.bands.map((plane, i) => (tuple.valid[i][0] ? plane[0] : null)), band_names: names };
}
