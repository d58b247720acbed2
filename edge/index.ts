// The Tessera edge Worker. The route table below is the public API.
import { Router, type IRequest } from "itty-router";
import { bearerMatches } from "../shared/bearer";
import { ConfigError } from "../shared/config";
import { errorResponse, HttpError, notFound } from "../shared/errors";
import { HEARTBEAT_PATH } from "../shared/registration";
import { AdmissionDO } from "./admission/admission-do";
import { DecoderContainer } from "./containers/decoder-container";
import { heartbeatHandler } from "./admission/heartbeat-route";
import { shardMetrics } from "./admission/shard-metrics";
import { unauthorized } from "./auth";
import { corsify, preflight } from "./cors";
import { sessionOriginCors } from "./access/gate";
import { edgeConfig, type Env } from "./env";
import { invalidateHandler } from "./handlers/admin";
import { activeAccessHandler, kioskAccessHandler, loginReturnHandler, logoutHandler, tokenHandler } from "./handlers/auth";
import { probeHandler } from "./handlers/probe";
import { fileHandler } from "./handlers/file";
import { collectionHandler } from "./handlers/collection";
import { followVersion, withSource } from "./handlers/follow-version";
import { imageHandler, misshapenImageHandler } from "./handlers/image";
import { baseUriHandler, infoHandler } from "./handlers/info";
import { bboxHandler, featureHandler, previewHandler, sizedPreviewHandler } from "./handlers/area";
import { statisticsHandler, statisticsPostHandler } from "./handlers/statistics";
import { georeferenceHandler } from "./handlers/georeference";
import { manifestElsewhereHandler, manifestHandler } from "./handlers/manifest";
import { misshapenTileHandler, tileHandler } from "./handlers/tile";
import { pointHandler } from "./handlers/point";
import { mapInfoHandler } from "./handlers/map-info";
import { tileJsonHandler } from "./handlers/tilejson";
import { wmtsHandler } from "./handlers/wmts";
import { tileMatrixSetHandler, tileMatrixSetsHandler } from "./handlers/tile-matrix-sets";
import "./operator-tile-matrix-sets";
import { algorithmHandler, algorithmsHandler } from "./handlers/algorithms";
import { errorCacheControl, isPermanentError } from "./http-cache";
import { stampRequestId, withRequestId } from "./request-id";
import { cacheTagged } from "./cache-purge";

export { AdmissionDO, DecoderContainer };

type Args = [Env, ExecutionContext];

const router = Router<IRequest, Args>({
  before: [withRequestId, preflight],
  catch: failure,
  finally: [corsify, sessionOriginCors, stampRequestId, cacheTagged],
});

// Every :id is a plain source id or a snapshot, {id}@{version}, and under /iiif a restricted
// source's degraded image, {id}~degraded (handlers/params.ts). /auth/… and …/probe are the
// Authorization Flow 2.0 services of restricted sources (handlers/auth.ts, handlers/probe.ts).
// manifest.json is the image as a IIIF Presentation 3.0 manifest (handlers/manifest.ts), and
// georeference.json its Georeference Extension annotation (handlers/georeference.ts). /bbox and
// /preview are titiler's crops of a map, as pictures or GeoTIFF (handlers/area.ts); /statistics
// its values' statistics, of the whole source or of posted GeoJSON features (handlers/statistics.ts).
router
  .get("/iiif/3/collection.json", collectionHandler)
  .get("/iiif/3/:id", withSource(baseUriHandler(3)))
  .get("/iiif/3/:id/info.json", withSource(infoHandler(3)))
  .get("/iiif/3/:id/manifest.json", withSource(manifestHandler))
  .get("/iiif/3/:id/georeference.json", withSource(georeferenceHandler))
  .get("/iiif/3/:id/file", followVersion(fileHandler))
  .get("/iiif/3/:id/:region/:size/:rotation/:qf", followVersion(imageHandler(3)))
  .get("/iiif/2/:id", withSource(baseUriHandler(2)))
  .get("/iiif/2/:id/info.json", withSource(infoHandler(2)))
  .get("/iiif/2/:id/manifest.json", withSource(manifestElsewhereHandler))
  .get("/iiif/2/:id/:region/:size/:rotation/:qf", followVersion(imageHandler(2)))
  .get("/iiif/3/:id/probe", withSource(probeHandler(3)))
  .get("/iiif/2/:id/probe", withSource(probeHandler(2)))
  .get("/iiif/3/:id/*", misshapenImageHandler(3))
  .get("/iiif/2/:id/*", misshapenImageHandler(2))
  .get("/tiles/:id/:tileMatrixSetId/tilejson.json", withSource(tileJsonHandler))
  .get("/tiles/:id/:tileMatrixSetId/WMTSCapabilities.xml", withSource(wmtsHandler))
  .get("/tiles/:id/:tileMatrixSetId/:z/:x/:y", followVersion(tileHandler))
  .get("/tiles/:id/*", misshapenTileHandler)
  .get("/bbox/:id/:box", bboxHandler)
  .get("/bbox/:id/:box/:file", bboxHandler)
  .post("/feature/:file", featureHandler)
  .post("/feature/:id/:file", featureHandler)
  .get("/preview/:file", previewHandler)
  .get("/preview/:id/:file", sizedPreviewHandler)
  .get("/statistics/:id", statisticsHandler)
  .post("/statistics/:id", statisticsPostHandler)
  .get("/point/:id/:coords", followVersion(pointHandler))
  .get("/info/:id", mapInfoHandler)
  .get("/tileMatrixSets", tileMatrixSetsHandler)
  .get("/algorithms", algorithmsHandler)
  .get("/algorithms/:id", algorithmHandler)
  .get("/auth/active", activeAccessHandler)
  .get("/auth/active/return", loginReturnHandler)
  .post("/auth/active/return", loginReturnHandler)
  .get("/auth/kiosk", kioskAccessHandler)
  .get("/auth/:profile/token", tokenHandler)
  .get("/auth/logout", logoutHandler)
  .get("/tileMatrixSets/:id", tileMatrixSetHandler)
  .get("/metrics", metricsHandler)
  .post(HEARTBEAT_PATH, heartbeatHandler)
  .post("/admin/sources/:id/invalidate", invalidateHandler)
  .all("*", () => {
    throw notFound("no such route");
  });

async function metricsHandler(req: IRequest, env: Env): Promise<Response> {
  const config = edgeConfig(env); // a bad variable is named here, not lost inside the DO
  if (config.metricsToken && !(await bearerMatches(req.headers.get("authorization"), config.metricsToken))) {
    return unauthorized("GET /metrics needs Authorization: Bearer <METRICS_TOKEN>", "metrics");
  }
  return shardMetrics(env, config.placement);
}

/** Every failure becomes an answer from the one error table; client errors may be cached. */
function failure(err: unknown, req: IRequest, env: Env): Response {
  if (!(err instanceof HttpError)) {
    console.error(JSON.stringify({ level: "error", msg: String(err), requestId: req.requestId }));
    // A misconfigured deployment says which variable is wrong; nothing else leaks.
    const message = err instanceof ConfigError ? `configuration: ${err.message}` : "internal failure";
    return errorResponse(new HttpError("bad_gateway", message), { "cache-control": "no-store" });
  }
  let cacheControl = "no-store";
  if (isPermanentError(err.status)) {
    try {
      cacheControl = errorCacheControl(edgeConfig(env));
    } catch (configError) {
      return failure(configError, req, env); // a bad variable outranks the client's error
    }
  }
  return errorResponse(err, { "cache-control": cacheControl });
}

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    if (request.method !== "HEAD") return router.fetch(request, env, ctx);
    // HEAD is GET without the body: same status, same headers. The body is cancelled, not left
    // unread: a streamed answer would wait for its reader, holding its permit to the deadline.
    const res: Response = await router.fetch(new Request(request, { method: "GET" }), env, ctx);
    ctx.waitUntil(res.body?.cancel() ?? Promise.resolve());
    return new Response(null, res);
  },
} satisfies ExportedHandler<Env>;
