// The decoder as a Cloudflare Container with wrangler on podman (infra/containers/), as an
// operator runs it locally: `wrangler deploy --dry-run --env containers` builds the decoder's
// image, and under `wrangler dev` (infra/containers/wrangler-dev.sh: podman's Docker-compatible
// service and the stand-in for Cloudflare's networking sidecar) the containers' DOs start the image
// in podman, register their decoders, and the admission DO's requests reach them through the
// stand-in. Skipped, saying why, where podman cannot run containers.
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { expect, it } from "vitest";
import { ROOT } from "../../infra/root";
import { untilRegistered } from "../../infra/local/stack";
import { containersRuntimeEnv, skipWithoutPodman } from "../support/podman-runtime";
import { freePort, whenReady } from "../support/wrangler-dev";

const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", NO_COLOR: "1" };
/** What the containers of `wrangler dev --env containers` are named after (workerd adds a session and a hash). */
const CONTAINER_NAMES = "tessera-containers-DecoderContainer";
/** The first run makes the Debian base (debootstrap), the sidecar stand-in and the decoder's image. */
const START_TIMEOUT_MS = 600_000;

const decoderContainers = () =>
  spawnSync("podman", ["ps", "--all", "--quiet", "--filter", `name=${CONTAINER_NAMES}`], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);

/** Starts the operator's wrapper; `ready` once wrangler dev serves, rejected with its output if it exits first. */
function startWranglerDev(port: number, inspector: number, state: string): { dev: ChildProcess; ready: Promise<void> } {
  const ports = ["--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector)];
  // A state of its own: the DOs of an earlier run would start their containers by their alarms.
  const args = [...ports, "--persist-to", state, "--var", "DECODER_SECRET:wrangler-dev-containers-test"];
  const dev = spawn("bash", ["infra/containers/wrangler-dev.sh", ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  return { dev, ready: whenReady(dev, "wrangler-dev.sh").ready };
}

/** info.json, asked until the containers' decoders answer: until then the edge answers 503 + Retry-After. */
async function untilServed(url: string, timeoutMs: number): Promise<{ first: Response; served: Response }> {
  const first = await fetch(url);
  await first.body?.cancel();
  for (const until = Date.now() + timeoutMs; ; ) {
    const res = await fetch(url);
    if (res.status === 200 || Date.now() > until) return { first, served: res };
    await res.body?.cancel();
    await new Promise((r) => setTimeout(r, 500));
  }
}

it("wrangler deploy --dry-run --env containers builds the decoder's image with podman", { timeout: START_TIMEOUT_MS }, async (ctx) => {
  skipWithoutPodman(ctx);
  // What wrangler-dev.sh does first: the machine set up, the image's context staged.
  const runtime = containersRuntimeEnv();
  execFileSync("bash", ["infra/image/build.sh", "--context-only"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  const outdir = await mkdtemp(path.join(tmpdir(), "tessera-deploy-"));
  const run = spawnSync("npx", ["wrangler", "deploy", "--dry-run", "--env", "containers", "--outdir", outdir], { cwd: ROOT, env: { ...env, ...runtime }, encoding: "utf8" });
  await rm(outdir, { recursive: true, force: true });
  expect(run.status, run.stdout + run.stderr).toBe(0);
  expect(run.stdout + run.stderr).toMatch(/Building image tessera-decodercontainer-containers:\S+\n[^]*Successfully tagged localhost\/tessera-decodercontainer-containers:/);
  expect(run.stdout).toMatch(/--dry-run: exiting now\./);
});

it("wrangler dev --env containers runs the decoder's image in podman: both containers register and a tile comes back through one", { timeout: START_TIMEOUT_MS + 120_000 }, async (ctx) => {
  skipWithoutPodman(ctx);
  const before = new Set(decoderContainers());
  const [port, inspector] = [await freePort(), await freePort()];
  const state = await mkdtemp(path.join(tmpdir(), "tessera-containers-"));
  const { dev, ready } = startWranglerDev(port, inspector, state);
  const exited = new Promise((resolve) => dev.once("exit", resolve));
  const url = `http://127.0.0.1:${port}`;
  try {
    await ready;
    // No decoder registers until an admission DO wakes the containers: the first request does.
    const { first, served } = await untilServed(`${url}/iiif/3/test-pattern/info.json`, 60_000);
    expect([first.status, first.headers.get("retry-after")]).toEqual([503, "1"]);
    expect(served.status).toBe(200);
    expect(await served.json()).toMatchObject({ width: 1000, height: 1000 });
    await untilRegistered(url, 2, 30_000);

    // Lossless source, lossless answer: the tile is the reference PNG's pixels exactly.
    const res = await fetch(`${url}/iiif/3/test-pattern-deflate/0,0,256,256/max/0/default.png`);
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "image/png"]);
    const tile = await sharp(Buffer.from(await res.arrayBuffer())).removeAlpha().raw().toBuffer();
    const reference = await sharp(path.join(ROOT, "samples/test-pattern.png")).extract({ left: 0, top: 0, width: 256, height: 256 }).removeAlpha().raw().toBuffer();
    expect(tile.equals(reference)).toBe(true);
  } finally {
    dev.kill("SIGTERM");
    await exited;
    await rm(state, { recursive: true, force: true });
  }
  // The wrapper removes the containers it started, sidecars included.
  expect(decoderContainers().filter((id) => !before.has(id))).toEqual([]);
});
