// A decoder as an operator installs it: the built decoder (dist/decoder, from this project's
// global setup) and the package files only, `npm ci --omit=dev` run by the machine's own npm and
// Node (this test takes the project's node_modules/.bin off the PATH), then `npm run decoder`. It
// must run on the Node LTS the project pins, not on the machine's Node.
import { spawn, spawnSync } from "node:child_process";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { DECODER, signedHeaders } from "../../shared/protocol";
import { listeningUrl } from "../support/decoder-process";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SECRET = "production-install-test";
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

/** PATH without any node_modules/.bin: what an operator's shell has. */
const machinePath = () =>
  (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((p) => !p.includes(`node_modules${path.sep}.bin`))
    .join(path.delimiter);

it("npm ci --omit=dev brings the pinned Node, and npm run decoder serves on it", { timeout: 240_000 }, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "tessera-prod-"));
  dirs.push(dir);
  for (const entry of ["package.json", "package-lock.json", "dist/decoder", "samples"]) {
    await cp(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
  }
  const env = { ...process.env, PATH: machinePath(), npm_config_audit: "false", npm_config_fund: "false" };
  const install = spawnSync("npm", ["ci", "--omit=dev"], { cwd: dir, env, encoding: "utf8" });
  expect(install.status, install.stderr).toBe(0);

  const decoder = spawn("npm", ["run", "--silent", "decoder"], {
    cwd: dir,
    env: { ...env, TESSERA_DECODER_SECRET: SECRET, TESSERA_DECODER_PORT: "0", TESSERA_DATA_DIR: path.join(dir, "samples") },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true, // npm, its shell and the decoder are one process group, stopped together
  });
  try {
    const url = await listeningUrl(decoder);
    const pinned = JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8")).dependencies.node;
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^tessera_decoder_nodejs_version_info\\{version="v${pinned}"`, "m"));
    const info = DECODER.info("test-pattern");
    const res = await fetch(url + info, { headers: await signedHeaders(SECRET, "GET", info) });
    expect(res.status).toBe(200);
  } finally {
    process.kill(-decoder.pid!, "SIGTERM");
  }
});
