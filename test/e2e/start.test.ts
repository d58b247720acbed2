// `npm start`, the README's first command, as a publisher uses it: it prints where to open the
// viewer and the admin token, and that token invalidates a source through the admin route.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { expect, it } from "vitest";
import { ROOT } from "../../infra/root";

it("prints the viewer's and the map's addresses, serving both pages, and an admin token that the admin route accepts", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", "infra/local/start.ts"], {
    cwd: ROOT,
    env: { ...process.env, TESSERA_PORT: "0", TESSERA_DECODER_PORT: "0", TESSERA_VIEWER_PORT: "0", TESSERA_ADMIN_TOKEN: "" },
    stdio: ["ignore", "pipe", "ignore"],
  });
  try {
    const printed: string[] = [];
    await new Promise<void>((resolve, reject) => {
      child.once("exit", (code) => reject(new Error(`npm start exited with ${code}: ${printed.join("\n")}`)));
      createInterface({ input: child.stdout! }).on("line", (line) => {
        printed.push(line);
        if (line.includes("TESSERA_ADMIN_TOKEN=")) resolve();
      });
    });
    const text = printed.join("\n");
    expect(text).toMatch(/Open the viewer: http:\/\/\S+\?id=test-pattern/);
    // The map page is served beside it, with MapLibre from node_modules.
    const map = /or the map: +(http:\/\/\S+\/)map\.html\?id=utm-quadrants/.exec(text)![1];
    for (const path of ["map.html?id=utm-quadrants", "maplibre-gl/maplibre-gl.mjs", "maplibre-gl/maplibre-gl-worker.mjs", "maplibre-gl/maplibre-gl.css"]) {
      const res = await fetch(map + path);
      expect(res.status, path).toBe(200);
      await res.arrayBuffer();
    }
    // No path leaves the library's build folder, even to a file of a served kind.
    expect((await fetch(`${map}maplibre-gl/..%2F..%2Fopenseadragon%2Fbuild%2Fopenseadragon%2Fopenseadragon.js`)).status).toBe(404);
    const [, edge, token] = /TESSERA_EDGE_URL=(\S+) TESSERA_ADMIN_TOKEN=([0-9a-f]{32})/.exec(text)!;
    const invalidate = (bearer: string) =>
      fetch(`${edge}/admin/sources/test-pattern/invalidate`, { method: "POST", headers: { authorization: `Bearer ${bearer}` } });
    expect((await invalidate("not-the-token")).status).toBe(401);
    const res = await invalidate(token);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: "test-pattern", decoders: 1, invalidated: 1 });
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
});
