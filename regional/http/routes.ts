// The decoder's API. Two routes of the operator's: /health, open to its probes, and /metrics, to
// the bearer of TESSERA_METRICS_TOKEN once that is set; everything under /v1 is the
// edge's (the admission DO's), signed, its signature checked before the route is looked up. A
// route with a limiter holds a permit of it until its answer's last byte is written, runs under
// a deadline (the DO's, else the decoder's own), and the DO may cancel it by its id; the others
// answer at once. While the decoder drains, only the routes marked so are answered.
import { bbox, feature, preview, sizedFeature, sizedPreview } from "../handlers/area";
import { cancel } from "../handlers/cancel";
import { file } from "../handlers/file";
import { health } from "../handlers/health";
import { image } from "../handlers/image";
import { info } from "../handlers/info";
import { invalidate } from "../handlers/invalidate";
import { metrics } from "../handlers/metrics";
import { point } from "../handlers/point";
import { sources } from "../handlers/sources";
import { statistics } from "../handlers/statistics";
import { style } from "../handlers/style";
import { tile } from "../handlers/tile";
import { MAX_FEATURE_BODY_BYTES } from "../../shared/maps/feature";
import { route } from "./router";

export const ROUTES = [
  route("GET", "/health", health),
  route("GET", "/metrics", metrics, { whileDraining: true }),
  route("POST", "/v1/cancel/:requestId", cancel, { whileDraining: true }),
  route("POST", "/v1/invalidate/:id", invalidate),
  route("GET", "/v1/info/:id", info, { limiter: "requests" }),
  route("GET", "/v1/styles/:name", style, { limiter: "requests" }),
  route("GET", "/v1/sources", sources, { limiter: "requests" }),
  route("GET", "/v1/image/:id/:region/:size/:rotation/:qualityFormat", image, { limiter: "requests" }),
  route("GET", "/v1/tiles/:id/:tileMatrixSet/:z/:x/:y", tile, { limiter: "requests" }),
  route("GET", "/v1/statistics/:id", statistics, { limiter: "requests" }),
  route("POST", "/v1/statistics/:id", statistics, { limiter: "requests", bodyBytes: MAX_FEATURE_BODY_BYTES }),
  route("GET", "/v1/areas/:id/bbox/:file", bbox, { limiter: "requests" }),
  route("GET", "/v1/areas/:id/bbox/:box/:file", bbox, { limiter: "requests" }),
  route("GET", "/v1/areas/:id/:file", preview, { limiter: "requests" }),
  route("GET", "/v1/areas/:id/preview/:file", sizedPreview, { limiter: "requests" }),
  route("POST", "/v1/areas/:id/:file", feature, { limiter: "requests", bodyBytes: MAX_FEATURE_BODY_BYTES }),
  route("POST", "/v1/areas/:id/feature/:file", sizedFeature, { limiter: "requests", bodyBytes: MAX_FEATURE_BODY_BYTES }),
  route("GET", "/v1/point/:id/:coords", point, { limiter: "requests" }),
  // /file decodes nothing: a cap of its own, and its stream ends with its client, not its deadline.
  route("GET", "/v1/file/:id", file, { limiter: "transfers" }),
];
