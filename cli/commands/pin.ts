// tessera pin <id> <version> and tessera rollback <id>: re-point the version a source's plain id
// serves (no bytes are copied), then make the edge serve it now.
import type { Command } from "commander";
import type { CatalogEntry } from "../../shared/catalog";
import type { Output } from "../output";
import { sourceIdArgument } from "../source-id-argument";
import { invalidateAtEdge, openStore, refusing } from "../publishing";

export function addPinCommands(program: Command, output: Output): void {
  program
    .command("pin")
    .description("serve this version of a source under its plain id")
    .argument("<id>", "the source id", sourceIdArgument)
    .argument("<version>", "a version, as `tessera versions` lists it")
    // An S3 version id may begin with "-": it is the version, not an option. What is not a
    // version is refused by the store.
    .allowUnknownOption()
    .action(async (id: string, version: string) => repinned(output, id, await refusing((await openStore()).pin(id, version))));
  program
    .command("rollback")
    .description("serve the version pinned before the current one")
    .argument("<id>", "the source id", sourceIdArgument)
    .action(async (id: string) => repinned(output, id, await refusing((await openStore()).rollback(id))));
}

async function repinned(output: Output, id: string, entry: CatalogEntry): Promise<void> {
  const edge = await invalidateAtEdge(id);
  output.result({ id, version: entry.pin, edge }, () => `${id} now serves version ${entry.pin} (edge invalidated)`);
}
