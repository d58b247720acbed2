// The decoder as the tests start it: `npm run build:decoder`'s bundle, made once for the content
// of its sources into .tmp/decoder-<hash>/ and reused until a source changes, so the dozens of
// decoders a run starts skip tsx's compile (about a second of CPU each) and run as deployed. Two
// test processes building at once each build into a directory of their own; the first rename wins.
import { createHash } from "node:crypto";
import { readdir, readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { buildDecoder } from "../../infra/build/decoder.ts";
import { ROOT } from "../../infra/root.ts";

const INPUTS = ["regional", "shared", "infra/build/decoder.ts", "package-lock.json"];
// Two levels below the repository, as dist/decoder/ is: the bundle finds the samples from there.
const BUILDS = path.join(ROOT, ".tmp");
const PREFIX = "decoder-";

/** The build's directory (with a trailing slash); TESSERA_DECODER_BUILD names it for the decoders this process and its workers start. */
export async function useDecoderBuild(): Promise<string> {
  const dir = path.join(BUILDS, PREFIX + (await sourceHash())) + "/";
  if (!(await exists(path.join(dir, "main.js")))) {
    const own = `${dir.slice(0, -1)}.${process.pid}.partial/`;
    await buildDecoder(own);
    await rename(own, dir).catch(() => rm(own, { recursive: true, force: true }));
    await pruneOthers(dir);
  }
  process.env.TESSERA_DECODER_BUILD = dir;
  return dir;
}

async function sourceHash(): Promise<string> {
  const hash = createHash("sha256");
  for (const file of (await Promise.all(INPUTS.map(files))).flat().sort()) {
    hash.update(`${file}\0`).update(await readFile(path.join(ROOT, file))).update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}

/** Every file under `entry` (a file or a folder), relative to the repository. */
async function files(entry: string): Promise<string[]> {
  if (!(await stat(path.join(ROOT, entry))).isDirectory()) return [entry];
  const found = await readdir(path.join(ROOT, entry), { recursive: true, withFileTypes: true });
  return found.filter((f) => f.isFile()).map((f) => path.relative(ROOT, path.join(f.parentPath, f.name)));
}

/** Builds of older sources are not needed again. */
async function pruneOthers(keep: string): Promise<void> {
  for (const name of await readdir(BUILDS)) {
    const other = path.join(BUILDS, name) + "/";
    if (name.startsWith(PREFIX) && other !== keep && !name.endsWith(".partial")) await rm(other, { recursive: true, force: true });
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(() => true, () => false);
}
