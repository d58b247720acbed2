// GET /metrics: the decoder's Prometheus page (the process's metrics, this server's runtime
// limits, the drain), answered while draining too, so the drain itself can be watched.
import type { Handler } from "../http/router";

export const metrics: Handler<object> = async (_request, decoder) => {
  const page = decoder.metricsPage;
  return { status: 200, headers: { "content-type": page.contentType }, body: Buffer.from(await page.metrics()) };
};
