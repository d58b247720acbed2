// The decoder as it is deployed: dist/decoder (built by this project's global setup), run by the
// pinned Node with no loader. It is copied to a directory of its own, beside a copy of the
// samples as a checkout has them, so nothing outside it (the checkout's node_modules, tsx, the
// TypeScript sources) can be what makes it work.
import { spawn, spawnSync } from "node:child_process";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ROOT } from "../../infra/root";
import { FORMATS } from "../../shared/iiif/image-request";
import { DECODER, signedHeaders } from "../../shared/protocol";
import { patternCog } from "../support/pattern-cog";
import { listeningUrl } from "../support/decoder-process";

const SECRET = "bundle-test";
let dir: string;
let main: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-bundle-"));
  await cp(`${ROOT}dist/decoder`, path.join(dir, "dist/decoder"), { recursive: true });
  await cp(`${ROOT}samples`, path.join(dir, "samples"), { recursive: true });
  // Large enough that its full is work of the full partition, which renders on the pool.
  patternCog(path.join(dir, "samples/big.tif"), 4000);
  main = path.join(dir, "dist/decoder/main.js");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function signedGet(url: string, target: string): Promise<Response> {
  return fetch(url + target, { headers: await signedHeaders(SECRET, "GET", target) });
}

/** Runs `test` against the copied bundle, started with its defaults, and stops it after. */
async function withBundle(test: (url: string) => Promise<void>): Promise<void> {
  const decoder = spawn(process.execPath, [main], {
    cwd: dir,
    env: { PATH: process.env.PATH, TESSERA_DECODER_SECRET: SECRET, TESSERA_DECODER_PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await test(await listeningUrl(decoder));
  } finally {
    decoder.kill("SIGTERM");
  }
}

it("serves the samples beside it by default, renders fulls in its pool processes and encodes JPEG 2000 on its worker", () =>
  withBundle(async (url) => {
    expect((await signedGet(url, DECODER.info("test-pattern"))).status).toBe(200);

    const full = await signedGet(url, "/v1/image/big/full/3000,/0/default.jpg");
    expect(full.status).toBe(200);
    expect(await sharp(Buffer.from(await full.arrayBuffer())).metadata()).toMatchObject({ format: "jpeg", width: 3000, height: 3000 });
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^tessera_decoder_render_pool_renders_total 1$/m);

    const jp2 = await signedGet(url, "/v1/image/test-pattern/full/256,/0/default.jp2");
    expect(jp2.status).toBe(200);
    expect(jp2.headers.get("content-type")).toBe("image/jp2");
    // The JP2 signature box.
    expect(Buffer.from(await jp2.arrayBuffer()).subarray(0, 12).toString("hex")).toBe("0000000c6a5020200d0a870a");
  }));

// A package that loads files of its own at run time (pdfkit's font metrics, OpenJPEG's .wasm)
// works from source and fails only in the bundle: every format is asked for here.
it("writes every IIIF format it declares", () =>
  withBundle(async (url) => {
    const answered: Record<string, number> = {};
    for (const format of FORMATS) answered[format] = (await signedGet(url, `/v1/image/test-pattern/full/64,/0/default.${format}`)).status;
    expect(answered).toEqual(Object.fromEntries(FORMATS.map((f) => [f, 200])));
  }));

it("stops with exit 1 and a message naming a bad variable", () => {
  const run = spawnSync(process.execPath, [main], {
    cwd: dir,
    env: { PATH: process.env.PATH, TESSERA_DECODER_SECRET: SECRET, TESSERA_EDGE_URL: "edge.example.org" },
    encoding: "utf8",
    timeout: 10_000,
  });
  expect(run.status).toBe(1);
  expect(run.stderr).toMatch(/^tessera decoder: TESSERA_EDGE_URL must be an http\(s\) URL, got "edge\.example\.org"$/m);
});
