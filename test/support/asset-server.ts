// A real HTTP server of asset files for the tests of HTTP(S) mosaic assets: it serves the files of
// a folder with strong ETags (from their content), single byte ranges (206) and If-Match (412),
// and on request misbehaves as web servers do. It records every connection and request it
// receives, so a test can show that a refused asset never reached it.

import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";

export type Misbehaviour =
  | "weak-etag" // ETag W/"…"
  | "no-etag" // no ETag at all
  | "ignore-range" // 200 with the whole file
  | "ignore-if-match" // serves whatever the file is now, with its new ETag
  | "redirect" // 302 to `redirectTo`
  | "stall" // never answers
  | "stall-body"; // sends the headers and half the body, then nothing

export interface AssetServer {
  readonly port: number;
  /** The headers and path of every request received, in order. */
  readonly requests: Array<{ path: string; headers: IncomingHttpHeaders }>;
  /** TCP connections accepted. */
  readonly connections: number;
  /** The most requests it was answering at once. */
  readonly maxConcurrent: number;
  misbehaviour?: Misbehaviour;
  redirectTo?: string;
  /** Wait before answering each request. */
  delayMs: number;
  close(): Promise<void>;
}

/** Serves `dir` on all loopback addresses (127.0.0.1 and ::1) at an ephemeral port. */
export async function startAssetServer(dir: string): Promise<AssetServer> {
  let active = 0;
  const state = {
    port: 0,
    requests: [] as AssetServer["requests"],
    connections: 0,
    maxConcurrent: 0,
    misbehaviour: undefined as Misbehaviour | undefined,
    redirectTo: undefined as string | undefined,
    delayMs: 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    state.requests.push({ path: url.pathname, headers: req.headers });
    state.maxConcurrent = Math.max(state.maxConcurrent, ++active);
    if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs));
    await answer(state, path.join(dir, decodeURIComponent(url.pathname)), req.headers, res);
    // Counted out as the answer ends, before the client can have it and send its next request.
    if (res.writableEnded) active--;
    else res.on("close", () => active--);
  });
  server.on("connection", () => state.connections++);
  // "::" takes IPv4 too (dual stack), so 127.0.0.1, ::1 and ::ffff:127.0.0.1 all reach it.
  await new Promise<void>((resolve) => server.listen(0, "::", resolve));
  state.port = (server.address() as AddressInfo).port;
  return state;
}

type State = Pick<AssetServer, "misbehaviour" | "redirectTo">;

async function answer(state: State, file: string, headers: IncomingHttpHeaders, res: ServerResponse): Promise<void> {
  const mode = state.misbehaviour;
  if (mode === "stall") return;
  if (mode === "redirect") return void res.writeHead(302, { location: state.redirectTo ?? "/" }).end();
  let body: Buffer;
  try {
    body = await readFile(file);
  } catch {
    return void res.writeHead(404).end();
  }
  const strong = `"${createHash("sha256").update(body).digest("hex").slice(0, 20)}"`;
  const etag = mode === "weak-etag" ? `W/${strong}` : mode === "no-etag" ? undefined : strong;
  const common = etag === undefined ? {} : { etag };
  const ifMatch = headers["if-match"];
  if (ifMatch !== undefined && ifMatch !== strong && mode !== "ignore-if-match") {
    return void res.writeHead(412, common).end();
  }
  const range = /^bytes=(\d+)-(\d+)$/.exec(headers.range ?? "");
  if (!range || mode === "ignore-range") {
    return void res.writeHead(200, { ...common, "content-length": body.length }).end(body);
  }
  const first = Number(range[1]);
  const last = Math.min(Number(range[2]), body.length - 1);
  if (first > last) return void res.writeHead(416, { "content-range": `bytes */${body.length}` }).end();
  const part = body.subarray(first, last + 1);
  res.writeHead(206, { ...common, "content-range": `bytes ${first}-${last}/${body.length}`, "content-length": part.length });
  if (mode === "stall-body") return void res.write(part.subarray(0, part.length >> 1));
  res.end(part);
}
