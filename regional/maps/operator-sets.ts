// The operator's own tile matrix sets: TESSERA_TILE_MATRIX_SETS names OGC TMS 2.0 JSON files,
// comma-separated, each holding one document or an array of them (the edge's build file,
// edge/tile-matrix-sets.json, is such an array: one file can serve both). Read when the decoder
// starts, checked as the registry's documents are, each CRS resolved by the bundled EPSG tables;
// a bad one stops the start, naming the file and what is wrong with it.
import { readFileSync } from "node:fs";
import { badConfig } from "../../shared/config";
import { checkTileMatrixSets, documentsIn, type PlacedDocument } from "../../shared/maps/tile-matrix-sets";
import { crsOfName } from "./crs";

export const OPERATOR_SETS_VAR = "TESSERA_TILE_MATRIX_SETS";

/** The documents the variable's files hold, each checked; a ConfigError naming the file otherwise. */
export function readOperatorSets(env: NodeJS.ProcessEnv): PlacedDocument[] {
  const documents = operatorSetDocuments(env);
  let sets;
  try {
    sets = checkTileMatrixSets(documents);
  } catch (e) {
    throw badConfig(OPERATOR_SETS_VAR, `names a tile matrix set that is not valid: ${(e as Error).message}`);
  }
  const unusable = sets.findIndex((s) => !crsOfName(s.crsName));
  if (unusable >= 0) {
    throw badConfig(OPERATOR_SETS_VAR, `names a tile matrix set whose CRS is not in the bundled EPSG tables: ${documents[unusable].where}: ${sets[unusable].crsName}`);
  }
  return documents;
}

/** The documents the variable's files hold, unchecked: a render worker's, once the main thread has checked them. */
export function operatorSetDocuments(env: NodeJS.ProcessEnv): PlacedDocument[] {
  const files = (env[OPERATOR_SETS_VAR] ?? "").split(",").map((f) => f.trim()).filter(Boolean);
  return files.flatMap((file) => documentsIn(readJson(file), file));
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw badConfig(OPERATOR_SETS_VAR, `names ${file}, which cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw badConfig(OPERATOR_SETS_VAR, `names ${file}, which is not valid JSON`);
  }
}
