// The Tessera edge Worker. The route table below is the public API.
import { cors, Router, type IRequest } from "itty-router";
import { ConfigError } from "../shared/config";
import { errorResponse, HttpError, notFound } from "../shared/errors";
import { HEARTBEAT_PATH } from "../shared/registration";
import { admissionStub } from "./admission-client";
import { AdmissionDO, METRICS_PATH } from "./admission/admission-do";
import { heartbeatHandler } from "./admission/heartbeat-route";
import { edgeConfig, type Env } from "./env";
import { imageHandler } from "./handlers/image";
import { baseUriHandler, infoHandler } from "./handlers/info";

export { AdmissionDO };

type Args = [Env, ExecutionContext];
const { preflight, corsify } = cors({ origin: "*", allowMethods: ["GET", "HEAD", "OPTIONS"] });

const router = Router<IRequest, Args>({
  before: [preflight],
  catch: (err) => {
    if (err instanceof HttpError) return errorResponse(err);
    console.error(JSON.stringify({ level: "error", msg: String(err) }));
    // A misconfigured deployment says which variable is wrong; nothing else leaks.
    const message = err instanceof ConfigError ? `configuration: ${err.message}` : "internal failure";
    return errorResponse(new HttpError("bad_gateway", message));
  },
  finally: [corsify],
});

router
  .get("/iiif/3/:id", baseUriHandler)
  .get("/iiif/3/:id/info.json", infoHandler)
  .get("/iiif/3/:id/:region/:size/:rotation/:qf", imageHandler)
  .get("/metrics", metricsHandler)
  .post(HEARTBEAT_PATH, heartbeatHandler)
  .all("*", () => {
    throw notFound("no such route");
  });

function metricsHandler(_req: IRequest, env: Env): Promise<Response> {
  edgeConfig(env); // a bad variable is named here, not lost inside the DO
  return admissionStub(env).fetch(`https://admission${METRICS_PATH}`);
}

export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => router.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>;
