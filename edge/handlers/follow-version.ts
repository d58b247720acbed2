// Routes under /iiif/{2,3}/{id}: the id segment is parsed once into the source it names.
// A plain id follows the source. The edge answers from the version it last learned (for up to
// INFO_MAX_AGE); when the store no longer has that version (a local file rewritten in place, an
// S3 version deleted), the decoder says so with version_gone, and the request is answered once
// more from freshly fetched metadata: a 404 is for sources that do not exist. A snapshot never
// moves to another version: its fresh metadata is asked for its own version, which the decoder
// says is gone, so it answers 404 (remembered like an unknown source's), never another version.
import type { IRequest } from "itty-router";
import { HttpError } from "../../shared/errors";
import type { Env } from "../env";
import { forgetSourceInfo } from "../source-info";
import { sourceRef, type SourceRef } from "./params";

type Handler = (req: IRequest, env: Env, ctx: ExecutionContext) => Promise<Response>;
export type SourceHandler = (
  source: SourceRef,
  req: IRequest,
  env: Env,
  ctx: ExecutionContext,
) => Response | Promise<Response>;

/** The route's handler, given the source its path names. */
export const withSource =
  (handler: SourceHandler): Handler =>
  async (req, env, ctx) =>
    handler(sourceRef(req.params.id), req, env, ctx);

/** For routes that read a version's bytes (images, /file): what to do when it is gone. */
export const followVersion = (handler: SourceHandler): Handler =>
  withSource(async (source, req, env, ctx) => {
    try {
      return await handler(source, req, env, ctx);
    } catch (err) {
      if (!(err instanceof HttpError && err.kind === "version_gone")) throw err;
      await forgetSourceInfo(source);
      return handler(source, req, env, ctx);
    }
  });
