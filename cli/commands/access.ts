// tessera access <id> <open|active|kiosk|external> [--degraded-width <px>]: write who may see a
// source into its catalog entry (its pin, pins and policy kept), then make the edge learn it now.
import type { Command } from "commander";
import { accessArgument, accessJson, accessRule, accessText, degradedWidthOption } from "../access-rule";
import type { Output } from "../output";
import { invalidateAtEdge, openStore, refusing } from "../publishing";
import { sourceIdArgument } from "../source-id-argument";

export function addAccessCommand(program: Command, output: Output): void {
  program
    .command("access")
    .description("set who may see a source (the edge enforces it), and invalidate it at the edge")
    .argument("<id>", "the source id", sourceIdArgument)
    .addArgument(accessArgument())
    .addOption(degradedWidthOption())
    .action(async (id: string, access: string, options: { degradedWidth?: number }, command: Command) => {
      const rule = accessRule(command, access, options.degradedWidth);
      const store = await openStore();
      // A typo must not look like a restriction that took: the id must name a source.
      await refusing(store.requireSource(id));
      await refusing(store.setAccess(id, rule));
      const edge = await invalidateAtEdge(id);
      output.result({ id, access: accessJson(rule), edge }, () => `${id} is now ${accessText(rule)} (edge invalidated)`);
    });
}
