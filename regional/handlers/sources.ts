// GET /v1/sources?after={id}&limit={n}: a page of the catalog's image sources, in the order of
// their store keys, each with its entry's label (SourceCatalog.listSources), from which the edge
// builds its IIIF collection. A cheap request like info: a few store calls, bounded by `limit`,
// which is at most MAX_SOURCE_PAGE whatever the caller asks.
import { badRequest, HttpError } from "../../shared/errors";
import { MAX_SOURCE_PAGE } from "../../shared/protocol";
import { isValidSourceId, SOURCE_ID_RULE } from "../../shared/source-id";
import { json } from "../http/answer";
import type { Handler } from "../http/router";

export const sources: Handler<Record<never, string>> = async ({ query, signal }, { catalog }) => {
  const after = query.get("after") ?? undefined;
  if (after !== undefined && !isValidSourceId(after)) throw badRequest(`after: ${SOURCE_ID_RULE}`);
  const limitText = query.get("limit") ?? String(MAX_SOURCE_PAGE);
  const limit = /^[1-9][0-9]{0,3}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit <= MAX_SOURCE_PAGE)) throw badRequest(`limit: a whole number from 1 to ${MAX_SOURCE_PAGE}`);
  if (!catalog.listSources) throw new HttpError("unsupported", "this catalog cannot list its sources");
  return json(200, await catalog.listSources(after, limit, signal));
};
