// How far a warped tile is from a reference of the same tile: over the pixels both call valid,
// the mean and the 99th percentile of the absolute difference (every band pooled, in the data's
// own units); and the share of pixels one calls valid and the other not (where they disagree on
// the data's edge).
import type { TilePlanes } from "./gdal-reference";

export interface TileDifference {
  meanAbs: number;
  p99: number;
  /** Fraction of the tile's pixels (every band pooled) whose validity differs. */
  validityMismatch: number;
  /** Fraction of the tile's pixels both call valid. */
  bothValid: number;
}

/** A fixture's tolerance: each figure's largest accepted value. */
export type Tolerance = Pick<TileDifference, "meanAbs" | "p99" | "validityMismatch">;

export function tileDifference(ours: TilePlanes, reference: TilePlanes): TileDifference {
  if (ours.width !== reference.width || ours.height !== reference.height || ours.bands.length !== reference.bands.length) {
    throw new Error(
      `tile shape ${ours.width}×${ours.height}×${ours.bands.length} differs from the reference's ` +
        `${reference.width}×${reference.height}×${reference.bands.length}`,
    );
  }
  const differences: number[] = [];
  let mismatched = 0;
  let total = 0;
  ours.bands.forEach((band, b) => {
    const valid = ours.valid[b];
    const refBand = reference.bands[b];
    const refValid = reference.valid[b];
    for (let i = 0; i < band.length; i++, total++) {
      if (valid[i] !== refValid[i]) mismatched++;
      else if (valid[i]) differences.push(Math.abs(band[i] - refBand[i]));
    }
  });
  differences.sort((a, b) => a - b);
  const sum = differences.reduce((s, d) => s + d, 0);
  return {
    meanAbs: differences.length ? sum / differences.length : 0,
    p99: differences.length ? differences[Math.min(differences.length - 1, Math.floor(differences.length * 0.99))] : 0,
    validityMismatch: mismatched / total,
    bothValid: differences.length / total,
  };
}

/** The figures of `d` above `tolerance`, named (empty: within it). */
export function exceeded(d: TileDifference, tolerance: Tolerance): string[] {
  return (Object.keys(tolerance) as (keyof Tolerance)[]).filter((k) => d[k] > tolerance[k]).map((k) => `${k} ${d[k]} > ${tolerance[k]}`);
}
