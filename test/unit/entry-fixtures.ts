// A decoder over a local data directory (fixtureDir's jpeg.tif and deflate.tif) for the tests of
// what a catalog entry says of a source, each test starting with no entry `<id>.tessera.json` of
// the ids it names.
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, beforeEach } from "vitest";
import { LocalCatalog } from "../../regional/source/local";
import { fixtureDir, startDecoder, type Decoder } from "./regional-helpers";

export interface EntryFixtures {
  /** The data directory. */
  dir: string;
  decoder: Decoder;
  entryFile(id: string): string;
  writeEntry(id: string, entry: unknown): Promise<void>;
}

export function useEntryFixtures(ids: string[]): EntryFixtures {
  let started: { dir: string; decoder: Decoder } | undefined;
  const entryFile = (id: string) => path.join(started!.dir, `${id}.tessera.json`);
  // Returning the teardown keeps the directory's removal beside its making.
  beforeAll(async () => {
    const { dir, remove } = await fixtureDir();
    started = { dir, decoder: await startDecoder(new LocalCatalog(dir)) };
    return async () => {
      await started?.decoder.close();
      await remove();
    };
  });
  beforeEach(async () => {
    for (const id of ids) await rm(entryFile(id), { force: true });
  });
  return {
    get dir() {
      return started!.dir;
    },
    get decoder() {
      return started!.decoder;
    },
    entryFile,
    writeEntry: (id, entry) => writeFile(entryFile(id), JSON.stringify(entry)),
  };
}
