// The operator's own tools, as the project pins them: `wrangler deploy --dry-run` bundles the
// Worker with every binding, and `wrangler dev` serves it so that a decoder registers and a tile
// comes back. Neither may print a warning (a stale compatibility flag, say) that an operator
// would have to wonder about. (Tests and benchmarks otherwise use Miniflare directly: wrangler
// dev's proxy costs most of a core here.)
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { ROOT } from "../../infra/root";
import { startDecoder, stopDecoder } from "../../infra/local/decoders";
import { untilRegistered } from "../../infra/local/stack";
import { freePort, whenReady } from "../support/wrangler-dev";

const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", NO_COLOR: "1" };
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

it("wrangler deploy --dry-run bundles the Worker and the admission DO, without a warning", async () => {
  const outdir = await mkdtemp(path.join(tmpdir(), "tessera-deploy-"));
  dirs.push(outdir);
  // --env=: the top-level Worker (wrangler.toml has the containers environment too), as npm run deploy targets it.
  const run = spawnSync("npx", ["wrangler", "deploy", "--env=", "--dry-run", "--outdir", outdir], { cwd: ROOT, env, encoding: "utf8" });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/env\.ADMISSION \(AdmissionDO\)\s+Durable Object/);
  expect(run.stdout).not.toMatch(/env\.DECODER_CONTAINER \(|containers are available/);
  expect(run.stdout + run.stderr).not.toMatch(/WARNING|deprecat/i);
  expect(existsSync(path.join(outdir, "index.js"))).toBe(true);
});

it("wrangler deploy --dry-run --env containers bundles the Worker with the decoder's container and its DO, without a warning", async () => {
  const outdir = await mkdtemp(path.join(tmpdir(), "tessera-deploy-"));
  dirs.push(outdir);
  // --containers-rollout=none: the configuration checked and the Worker bundled, the image not built (that needs a Docker engine).
  const run = spawnSync("npx", ["wrangler", "deploy", "--dry-run", "--env", "containers", "--containers-rollout=none", "--outdir", outdir], { cwd: ROOT, env, encoding: "utf8" });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/env\.DECODER_CONTAINER \(DecoderContainer\)\s+Durable Object/);
  expect(run.stdout).toMatch(/The following containers are available:\n- tessera-decodercontainer-containers \(.*infra\/image\/Containerfile\)/);
  expect(run.stdout + run.stderr).not.toMatch(/WARNING|deprecat/i);
});

it("wrangler dev serves the Worker: a decoder registers and a tile comes back", { timeout: 90_000 }, async () => {
  const [port, inspector] = [await freePort(), await freePort()];
  const secret = "wrangler-dev-test";
  const dev = spawn(
    "npx",
    ["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector), "--var", `DECODER_SECRET:${secret}`],
    { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  const { ready, output } = whenReady(dev, "wrangler dev");
  const url = `http://127.0.0.1:${port}`;
  let decoder: Awaited<ReturnType<typeof startDecoder>> | undefined;
  try {
    await ready;
    decoder = await startDecoder({ TESSERA_DECODER_SECRET: secret, TESSERA_DECODER_PORT: "0", TESSERA_EDGE_URL: url });
    await untilRegistered(url, 1);
    const res = await fetch(`${url}/iiif/3/test-pattern/0,0,256,256/max/0/default.jpg`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect(output()).not.toMatch(/WARNING|deprecat|became the default/i);
  } finally {
    if (decoder) await stopDecoder(decoder);
    process.kill(-dev.pid!, "SIGTERM");
  }
});
