// tessera invalidate <id>: make the edge serve a source's current version now (every decoder
// drops its opened snapshots; the edge location forgets the source's metadata). With --member,
// only that asset of a mosaic is opened afresh: a member replaced while the document was not.
import type { Command } from "commander";
import type { Output } from "../output";
import { sourceIdArgument } from "../source-id-argument";
import { invalidateAtEdge } from "../publishing";

export function addInvalidateCommand(program: Command, output: Output): void {
  program
    .command("invalidate")
    .description("make the edge serve a source's current version now")
    .argument("<id>", "the source id", sourceIdArgument)
    .option("--member <asset>", "only this asset of the mosaic <id>, as its document writes it")
    .action(async (id: string, options: { member?: string }) => {
      const edge = await invalidateAtEdge(id, options.member);
      const what = options.member === undefined ? "" : ` of member ${options.member}`;
      const after = options.member === undefined ? "; the edge forgot its metadata" : "";
      output.result(edge, () => `${id}: ${edge.invalidated} of ${edge.decoders} decoders dropped ${edge.dropped} snapshots${what}${after}`);
    });
}
