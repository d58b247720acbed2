// The decoder's OCI image as an operator runs it: built by infra/image/build.sh (Debian's podman;
// the base is made once and cached), started with podman on the host's network beside a local
// edge it registers with, then stopped as an orchestrator stops it.
import { execFileSync, spawnSync } from "node:child_process";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ROOT } from "../../infra/root";
import { startStack, untilRegistered, type Stack } from "../../infra/local/stack";
import { sumMetric } from "../support/metrics";
import { freePort } from "../support/wrangler-dev";

const IMAGE = "localhost/tessera-decoder:e2e";
const CONTAINER = `tessera-image-test-${process.pid}`;
const SECRET = "image-test-secret";
const MEMORY_BYTES = 1024 ** 3;
/** The image stays small: the base, the pinned Node and the decoder came to 224 MB. */
const MAX_IMAGE_BYTES = 250e6;

/** podman as it works on these machines: runc, explicit limits (see infra/image/build.sh). */
const podman = (...args: string[]) => execFileSync("podman", ["--runtime", "runc", ...args], { encoding: "utf8" }).trim();

let stack: Stack;
let port: number;

beforeAll(async () => {
  execFileSync("bash", ["infra/image/build.sh"], { cwd: ROOT, env: { ...process.env, TESSERA_IMAGE: IMAGE }, stdio: ["ignore", "ignore", "inherit"] });
  stack = await startStack({ decoders: 0, vars: { DECODER_SECRET: SECRET } });
  port = await freePort();
  podman(
    // Read-only, as the Kubernetes Deployment runs it: the decoder writes nothing.
    ...["run", "--detach", "--read-only", "--name", CONTAINER, "--network", "host", "--memory", String(MEMORY_BYTES)],
    ...["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=1024:1024"],
    ...["--env", `TESSERA_DECODER_SECRET=${SECRET}`, "--env", `TESSERA_DECODER_PORT=${port}`],
    ...["--env", `TESSERA_EDGE_URL=${stack.url}`, "--env", `TESSERA_DECODER_PUBLIC_URL=http://127.0.0.1:${port}`],
    IMAGE,
  );
  await untilRegistered(stack.url, 1, 30_000);
}, 600_000);
afterAll(async () => {
  spawnSync("podman", ["--runtime", "runc", "rm", "--force", CONTAINER]);
  await stack?.stop();
});

it("is small", () => {
  const size = Number(podman("image", "inspect", "--format", "{{.Size}}", IMAGE));
  process.stderr.write(`decoder image: ${(size / 1e6).toFixed(1)} MB\n`);
  expect(size).toBeLessThan(MAX_IMAGE_BYTES);
});

it("registers with the edge, reporting its container's memory limit, and serves a tile through it", async () => {
  expect(await sumMetric(stack.url, "tessera_admission_memory_limit_bytes ")).toBe(MEMORY_BYTES);
  const res = await fetch(`${stack.url}/iiif/3/test-pattern/0,0,512,512/256,/0/default.jpg`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("image/jpeg");
  expect(await sharp(Buffer.from(await res.arrayBuffer())).metadata()).toMatchObject({ format: "jpeg", width: 256, height: 256 });
});

it("runs the decoder as a user other than root, on the pinned Node", async () => {
  expect(podman("top", CONTAINER, "user", "args").split("\n").slice(1)).toEqual([expect.stringMatching(/^tessera\s+node --max-semi-space-size=8 dist\/decoder\/main\.js$/)]);
  const pinned = (await import("../../package.json", { with: { type: "json" } })).default.dependencies.node;
  expect(podman("exec", CONTAINER, "node", "--version")).toBe(`v${pinned}`);
});

it("passes its health check", () => {
  expect(spawnSync("podman", ["--runtime", "runc", "healthcheck", "run", CONTAINER]).status).toBe(0);
});

it("stops on SIGTERM with exit 0", () => {
  // A decoder that ignored SIGTERM would be killed after the 20 s and exit 137.
  podman("stop", "--time", "20", CONTAINER);
  expect(podman("inspect", "--format", "{{.State.ExitCode}}", CONTAINER)).toBe("0");
});
