// GET /v1/info/{id}?version=V: what the decoder knows of the pinned snapshot (its size, levels,
// tiles, limits, georeference or mosaic shape, who may see it, its description), from which the
// edge builds info.json, TileJSON and the manifest. Always opened through the catalog, a version
// asked for too: the access rule and description are the entry's now, not those a cached snapshot
// was opened with. The edge asks this once per INFO_MAX_AGE, not per tile, so the entry read is
// cheap.
import { VERSION_HEADER } from "../../shared/protocol";
import { json } from "../http/answer";
import type { Handler } from "../http/router";
import { withSnapshot } from "./snapshot";

export const info: Handler<{ id: string }> = ({ params, version, signal }, decoder) =>
  withSnapshot(
    decoder,
    params.id,
    version,
    signal,
    async (opened) => {
      const body = opened.info(params.id);
      return json(200, body, { [VERSION_HEADER]: body.version });
    },
    { fresh: true },
  );
