// GET /health: unauthenticated, for probes and the heartbeat's peers: alive, and how many decodes
// this decoder runs well at once. While draining it is refused like everything else, so a
// readiness probe takes the decoder out of its load balancer.
import { json } from "../http/answer";
import type { Handler } from "../http/router";

export const health: Handler<object> = (_request, decoder) => json(200, { ok: true, capacity: decoder.capacity });
