// Builds the regional decoder into dist/decoder/, a directory that runs on the pinned Node alone
// (`node dist/decoder/main.js`, no tsx): one ESM bundle with three entries (the decoder, its
// render-pool process and its OpenJPEG thread; code they share goes to chunks beside them), and
// node_modules/ with the packages that cannot be bundled and everything they depend on, copied
// from this checkout's install, so the image and a service run exactly what the tests ran.
import { execFileSync } from "node:child_process";
import { cp, mkdir, rm, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { ROOT } from "../root.ts";

export const DECODER_DIST = `${ROOT}dist/decoder/`;

/**
 * Left out of the bundle, loaded from node_modules at run time: native bindings (sharp and
 * libvips, TurboJPEG) and the OpenJPEG codec (it loads its .wasm file from beside its JavaScript).
 */
const RUNTIME_PACKAGES = ["sharp", "@julusian/jpeg-turbo", "@cornerstonejs/codec-openjpeg"];

export async function buildDecoder(outdir = DECODER_DIST): Promise<void> {
  await rm(outdir, { recursive: true, force: true });
  await build({
    entryPoints: {
      main: `${ROOT}regional/main.ts`,
      "render-process": `${ROOT}regional/render/render-process.ts`,
      "openjpeg-worker": `${ROOT}regional/encode/openjpeg-worker.ts`,
    },
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node24",
    external: RUNTIME_PACKAGES,
    // Bundled CommonJS packages still call require() for Node's built-ins; an ES module has none.
    banner: { js: 'import { createRequire as __tesseraRequire } from "node:module"; const require = __tesseraRequire(import.meta.url);' },
    legalComments: "linked",
    logLevel: "warning",
  });
  await writeFile(`${outdir}package.json`, JSON.stringify({ type: "module", private: true }, null, 2) + "\n");
  for (const location of runtimeModules()) {
    await mkdir(`${outdir}${location}`, { recursive: true });
    await cp(`${ROOT}${location}`, `${outdir}${location}`, { recursive: true });
  }
}

/** Where the runtime packages and their dependencies (transitively, as installed) are. */
function runtimeModules(): string[] {
  const names = RUNTIME_PACKAGES.map((name) => `#${name}`).join(", ");
  const found: { location: string }[] = JSON.parse(
    execFileSync("npm", ["query", `:is(${names}), :is(${names}) *`], { cwd: ROOT, encoding: "utf8" }),
  );
  return found.map((p) => p.location);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildDecoder();
