// Four real decoders behind the regions Worker tests: two for the region "near", two for "far"
// (both on this machine: a remote region cannot exist here, so the far one is faked by name),
// over one directory of sources whose id prefixes SOURCE_REGIONS maps to regions: a small
// picture for tiles, and a 3000² one whose whole-image renders are full-partition decodes.
// Each decoder runs 2 decodes at once, so each region has 4 permits, 2 per shard.
import { execFileSync } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { ROOT } from "../../infra/root.ts";
import { startDecoder, stopDecoder } from "../../infra/local/decoders.ts";
import { useDecoderBuild } from "./decoder-build.ts";

export const REGIONS_TEST_SECRET = "regions-test-secret";

/** Sources in the data directory: each of these ids is a copy of the bundled test pattern. */
export const PATTERN_IDS = ["near-pattern", "far-pattern", "both-pattern", "lost-pattern", "broken-a", "broken-b", "broken-c", "broken-d"];
/** Copies of one 3000² JPEG COG, for floods of full-image renders. */
export const BIG_IDS = ["far-big-a", "far-big-b", "far-big-c", "far-big-d"];

declare module "vitest" {
  export interface ProvidedContext {
    nearDecoderUrls: string;
    farDecoderUrls: string;
  }
}

export default async function setup(project: TestProject) {
  await useDecoderBuild();
  const dir = await mkdtemp(path.join(tmpdir(), "tessera-regions-"));
  for (const id of PATTERN_IDS) await copyFile(path.join(ROOT, "samples/test-pattern.tif"), path.join(dir, `${id}.tif`));
  const big = path.join(dir, "big.tif");
  execFileSync("gdal_translate", [
    "-q", "-outsize", "3000", "3000", "-r", "bilinear", "-of", "COG", "-co", "COMPRESS=JPEG", "-co", "BLOCKSIZE=512",
    path.join(ROOT, "samples/test-pattern.tif"), big,
  ]);
  for (const id of BIG_IDS) await copyFile(big, path.join(dir, `${id}.tif`));
  const env = { TESSERA_DECODER_SECRET: REGIONS_TEST_SECRET, TESSERA_DECODER_PORT: "0", TESSERA_DATA_DIR: dir, TESSERA_DECODER_CAPACITY: "2" };
  const decoders = await Promise.all([startDecoder(env), startDecoder(env), startDecoder(env), startDecoder(env)]);
  project.provide("nearDecoderUrls", decoders.slice(0, 2).map((d) => d.url).join(","));
  project.provide("farDecoderUrls", decoders.slice(2).map((d) => d.url).join(","));
  return async () => {
    await Promise.all(decoders.map(stopDecoder));
    await rm(dir, { recursive: true, force: true });
  };
}
