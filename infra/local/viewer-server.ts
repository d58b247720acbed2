// The local viewer site: a static server for two pages, an OpenSeadragon viewer that shows an
// image through the edge's IIIF 3 info.json (/) and a MapLibre map that shows a georeferenced
// source through its TileJSON (/map.html). It runs on its own origin (port), like a real viewer
// site, so every tile crosses the edge's CORS headers.
import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { createServer, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { dirname, extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** The site's own files: its two pages, told the edge's address, and their stylesheet. */
const SITE: Record<string, string> = { "/": "index.html", "/index.html": "index.html", "/map.html": "map.html", "/site.css": "site.css" };
// The libraries' build folders, served under their names: OpenSeadragon's (the script, its
// source map, the navigation button images) and MapLibre's (its modules, their worker and its
// stylesheet), found through Node's resolution so that a hoisted or nested install works alike.
const resolve = createRequire(import.meta.url).resolve;
const LIBRARIES: Record<string, string> = {
  openseadragon: dirname(resolve("openseadragon")),
  "maplibre-gl": dirname(resolve("maplibre-gl/package.json")) + `${sep}dist`,
};
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".png": "image/png",
};

export interface ViewerServer {
  url: string;
  close(): Promise<void>;
}

/** Serves the viewer pages on 127.0.0.1:port (0 = any free port); edgeUrl is the pages' default edge. */
export async function startViewerServer(opts: { port: number; edgeUrl: string }): Promise<ViewerServer> {
  // Each page reads its default edge from a meta tag, so the bare URL works whatever port the edge has.
  const files = new Map<string, string>();
  for (const name of new Set(Object.values(SITE))) {
    const text = await readFile(fileURLToPath(new URL(`viewer/${name}`, import.meta.url)), "utf8");
    files.set(name, text.replace("%EDGE_URL%", escapeAttribute(opts.edgeUrl)));
  }
  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? "/", "http://viewer").pathname;
    const [, library, ...rest] = path.split("/");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
    } else if (Object.hasOwn(SITE, path)) {
      res.writeHead(200, { "content-type": TYPES[extname(SITE[path])], "cache-control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : files.get(SITE[path]));
    } else if (Object.hasOwn(LIBRARIES, library) && rest.length > 0) {
      await serveLibraryFile(LIBRARIES[library], rest.join("/"), req.method, res);
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

async function serveLibraryFile(dir: string, relative: string, method: string, res: ServerResponse) {
  let file: string;
  try {
    file = normalize(join(dir, decodeURIComponent(relative)));
  } catch {
    res.writeHead(400, { "content-type": "text/plain" }).end("malformed path\n");
    return;
  }
  const type = TYPES[extname(file)];
  // Only files inside the library's build folder, of the kinds it ships: no path escapes.
  const inside = type !== undefined && file.startsWith(dir + sep);
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
