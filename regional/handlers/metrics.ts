// GET /metrics: the decoder's Prometheus page (the process's metrics, this server's runtime
// limits, the drain), answered while draining too, so the drain itself can be watched.
//
// With TESSERA_METRICS_TOKEN set, only to its bearer. The decoder's port is open to wherever the
// admission DO reaches it from, and the page tells anyone there when and how hard to push (load,
// queues, the work budget, the event loop's delay); collecting it also takes the event loop,
// outside the limiter, which a 401 barely does. A token rather than a listener of its own: in a
// container or a pod Prometheus scrapes the decoder's address, not its loopback, and a second
// port would need a firewall rule or a network policy of its own to be closed.
import { bearerChallenge, bearerMatches } from "../../shared/bearer";
import { HttpError } from "../../shared/errors";
import { errorAnswer } from "../http/answer";
import type { Handler } from "../http/router";

export const metrics: Handler<object> = async (request, decoder) => {
  const token = decoder.metricsToken;
  if (token && !(await bearerMatches(request.authorization, token))) {
    const refusal = new HttpError("unauthorized", "GET /metrics needs Authorization: Bearer <TESSERA_METRICS_TOKEN>");
    return errorAnswer(refusal, request.requestId, bearerChallenge("metrics"));
  }
  const page = decoder.metricsPage;
  return { status: 200, headers: { "content-type": page.contentType }, body: Buffer.from(await page.metrics()) };
};
