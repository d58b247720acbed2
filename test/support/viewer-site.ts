// A viewer site of someone else's: Mirador 4 or Tify on a page of its own origin, opening the
// manifest URL its `?manifest=` names, as a library's site would embed it. Both ship
// self-contained bundles (Mirador: a UMD script with React and MUI inside; Tify: one ES module
// with Vue and OpenSeadragon inside, and its stylesheet), so the page loads them as they are,
// nothing built. Each page hands the test the viewer's OpenSeadragon viewer as `window.viewer`
// and sets nothing else of the viewer's.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import path from "node:path";

const resolve = createRequire(import.meta.url).resolve;
// Neither package exports its package.json; their entries are the bundles themselves.
const MIRADOR = resolve("mirador");
const TIFY = resolve("tify");

const head = (title: string, style: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${title}</title>
<style>html, body { margin: 0; height: 100%; } ${style}</style>`;

const MIRADOR_PAGE = `${head("Mirador", "#mirador { position: absolute; inset: 0; }")}
</head>
<body>
<div id="mirador"></div>
<script src="/mirador.min.js"></script>
<script>
  const manifestId = new URLSearchParams(location.search).get("manifest");
  // A plugin added to Mirador's OpenSeadragonViewer is given OSD's viewer as a prop.
  const exposeViewer = (props) => { if (props.viewer) window.viewer = props.viewer; return null; };
  Mirador.viewer({
    id: "mirador",
    windows: [{ manifestId }],
    // One window with its information panel open, as a reader opening a link sees it.
    window: { allowClose: false, allowMaximize: false, sideBarOpen: true, defaultSideBarPanel: "info" },
    workspaceControlPanel: { enabled: false },
  }, [{ target: "OpenSeadragonViewer", mode: "add", component: exposeViewer }]);
</script>
</body>
</html>
`;

const TIFY_PAGE = `${head("Tify", "#tify { height: 100%; }")}
<link rel="stylesheet" href="/tify.css">
</head>
<body>
<div id="tify"></div>
<script type="module">
  import Tify from "/tify.js";
  const manifestUrl = new URLSearchParams(location.search).get("manifest");
  // Tify's defaults (English, no view beside the image), as its README embeds it.
  const tify = new Tify({ container: "#tify", manifestUrl });
  // Tify's API names its OpenSeadragon viewer \`viewer\` once the manifest is loaded.
  tify.ready.then(() => { window.viewer = tify.viewer; });
</script>
</body>
</html>
`;

const VIEWERS = {
  mirador: { page: MIRADOR_PAGE, files: { "/mirador.min.js": MIRADOR } },
  tify: { page: TIFY_PAGE, files: { "/tify.js": TIFY, "/tify.css": path.join(path.dirname(TIFY), "tify.css") } },
};
const TYPES: Record<string, string> = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8" };

export interface ViewerSite {
  /** The page; add `?manifest=<url>`. */
  url: string;
  close(): Promise<void>;
}

export async function startViewerSite(viewer: keyof typeof VIEWERS): Promise<ViewerSite> {
  const { page, files } = VIEWERS[viewer];
  const sizes = new Map(await Promise.all(Object.values(files).map(async (file) => [file, (await stat(file)).size] as const)));
  const server = createServer((req, res) => {
    const name = new URL(req.url ?? "/", "http://site").pathname;
    const file = (files as Record<string, string>)[name];
    if (name === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(page);
    } else if (file) {
      res.writeHead(200, { "content-type": TYPES[path.extname(file)], "content-length": sizes.get(file) });
      createReadStream(file).pipe(res);
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/`, close: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
}
