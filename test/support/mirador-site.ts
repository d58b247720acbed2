// A viewer site of someone else's: Mirador 4 on a page of its own origin, opening the manifest
// URL its `?manifest=` names, as a library's site would embed it. Mirador ships a self-contained
// UMD bundle (React and MUI inside), so the page loads it with one script tag, nothing built.
// The page hands the test Mirador's OpenSeadragon viewer as `window.viewer` (through a plugin, the
// only way Mirador shares it), and sets nothing else of Mirador's.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";

// Mirador's package exports no package.json; its "require" entry is the UMD bundle itself.
const BUNDLE = createRequire(import.meta.url).resolve("mirador");

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Mirador</title>
<style>html, body { margin: 0; height: 100%; } #mirador { position: absolute; inset: 0; }</style>
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

export interface MiradorSite {
  /** The page; add `?manifest=<url>`. */
  url: string;
  close(): Promise<void>;
}

export async function startMiradorSite(): Promise<MiradorSite> {
  const size = (await stat(BUNDLE)).size;
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://site").pathname;
    if (path === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(PAGE);
    } else if (path === "/mirador.min.js") {
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8", "content-length": size });
      createReadStream(BUNDLE).pipe(res);
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
