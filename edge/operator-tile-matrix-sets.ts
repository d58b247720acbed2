// The operator's own tile matrix sets on the edge, which has no files: they are given to the
// build. edge/tile-matrix-sets.json is a JSON array of OGC TMS 2.0 documents (empty as shipped),
// bundled into the Worker; the decoders read the same documents from the files
// TESSERA_TILE_MATRIX_SETS names (it may name this very file). A document that is not a valid
// set stops the Worker's start, and so its deploy, naming the entry. Imported for that effect.
import { addTileMatrixSets, documentsIn } from "../shared/maps/tile-matrix-sets";
import documents from "./tile-matrix-sets.json";

addTileMatrixSets(documentsIn(documents, "edge/tile-matrix-sets.json"));
