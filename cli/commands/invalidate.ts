// tessera invalidate <id>: make the edge serve a source's current version now (every decoder
// drops its opened snapshots; the edge location forgets the source's metadata).
import type { Command } from "commander";
import type { Output } from "../output";
import { invalidateAtEdge } from "../publishing";

export function addInvalidateCommand(program: Command, output: Output): void {
  program
    .command("invalidate")
    .description("make the edge serve a source's current version now")
    .argument("<id>", "the source id")
    .action(async (id: string) => {
      const edge = await invalidateAtEdge(id);
      output.result(edge, () => `${id}: ${edge.invalidated} of ${edge.decoders} decoders dropped ${edge.dropped} snapshots; the edge forgot its metadata`);
    });
}
