// tessera versions <id>: every version of a source, newest first, with its date, size, and which
// one is pinned (the one the plain id serves).
import type { Command } from "commander";
import type { Output } from "../output";
import { sourceIdArgument } from "../source-id-argument";
import { openStore, refusing } from "../publishing";

export function addVersionsCommand(program: Command, output: Output): void {
  program
    .command("versions")
    .description("list a source's versions, newest first, marking the pinned one")
    .argument("<id>", "the source id", sourceIdArgument)
    .action(async (id: string) => {
      const versions = await refusing((await openStore()).versions(id));
      output.result({ id, versions }, () =>
        versions
          .map((v) => `${v.pinned ? "*" : " "} ${v.version}  ${v.lastModified}  ${v.size} bytes${v.latest ? "  (latest)" : ""}`)
          .join("\n"),
      );
    });
}
