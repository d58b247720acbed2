// A plain source id follows the source. The edge answers from the version it last learned (for
// up to INFO_MAX_AGE); when the store no longer has that version (a local file rewritten in
// place, an S3 version deleted), the decoder says so with version_gone, and the request is
// answered once more from freshly fetched metadata: a 404 is for sources that do not exist.
import type { IRequest } from "itty-router";
import { HttpError } from "../../shared/errors";
import type { Env } from "../env";
import { forgetSourceInfo } from "../source-info";
import { sourceId } from "./params";

type Handler = (req: IRequest, env: Env, ctx: ExecutionContext) => Promise<Response>;

export const followVersion =
  (handler: Handler): Handler =>
  async (req, env, ctx) => {
    try {
      return await handler(req, env, ctx);
    } catch (err) {
      if (!(err instanceof HttpError && err.kind === "version_gone")) throw err;
      await forgetSourceInfo(sourceId(req.params.id));
      return handler(req, env, ctx);
    }
  };
