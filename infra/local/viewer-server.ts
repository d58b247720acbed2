// The local viewer site: a static server for an OpenSeadragon page that shows an image through
// the edge's IIIF 3 info.json. It runs on its own origin (port), like a real viewer site, so
// every tile crosses the edge's CORS headers.
import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { createServer, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { dirname, extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

const PAGE = fileURLToPath(new URL("viewer/index.html", import.meta.url));
// OpenSeadragon's build folder (the script, its source map, and the navigation button images),
// found through Node's resolution so that a hoisted or nested install works alike.
const OSD_DIR = dirname(createRequire(import.meta.url).resolve("openseadragon"));
const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".map": "application/json",
  ".png": "image/png",
};

export interface ViewerServer {
  url: string;
  close(): Promise<void>;
}

/** Serves the viewer page on 127.0.0.1:port (0 = any free port); edgeUrl is the page's default edge. */
export async function startViewerServer(opts: { port: number; edgeUrl: string }): Promise<ViewerServer> {
  // The page reads its default edge from a meta tag, so the bare URL works whatever port the edge has.
  const page = (await readFile(PAGE, "utf8")).replace("%EDGE_URL%", escapeAttribute(opts.edgeUrl));
  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? "/", "http://viewer").pathname;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
    } else if (path === "/" || path === "/index.html") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : page);
    } else if (path.startsWith("/openseadragon/")) {
      await serveOsdFile(path.slice("/openseadragon/".length), req.method, res);
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, "127.0.0.1", resolve);
  });
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/`, close: () => closeServer(server) };
}

async function serveOsdFile(relative: string, method: string, res: ServerResponse) {
  let file: string;
  try {
    file = normalize(join(OSD_DIR, decodeURIComponent(relative)));
  } catch {
    res.writeHead(400, { "content-type": "text/plain" }).end("malformed path\n");
    return;
  }
  const type = TYPES[extname(file)];
  // Only files inside OpenSeadragon's build folder, of the kinds it ships: no path escapes.
  const inside = type !== undefined && file.startsWith(OSD_DIR + sep);
  const size = inside ? await stat(file).then((s) => (s.isFile() ? s.size : -1), () => -1) : -1;
  if (size < 0) {
    res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    return;
  }
  res.writeHead(200, { "content-type": type, "content-length": size, "cache-control": "public, max-age=3600" });
  if (method === "HEAD") res.end();
  else createReadStream(file).pipe(res);
}

function escapeAttribute(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
}
