// tessera describe <id> [--label …] [--summary …] [--rights …] [--required-statement …]
// [--metadata …] [--clear <field>]: write what a source is, for people, into its catalog entry (its
// pin, pins, policy and access kept), merged into what the entry says, then make the edge learn it
// now, as its manifest shows it. With no option, prints the description.
import type { Command } from "commander";
import { withDescription } from "../../shared/catalog";
import { readDescription, type Description } from "../../shared/description";
import { descriptionChange, descriptionOptions, descriptionText, redescribed, type DescriptionOptions } from "../description-options";
import type { Output } from "../output";
import { invalidateAtEdge, openStore, refusing } from "../publishing";
import { sourceIdArgument } from "../source-id-argument";

export function addDescribeCommand(program: Command, output: Output): void {
  const command = program
    .command("describe")
    .description("set what a source is for people (its manifest's label, summary, rights, metadata) and invalidate it at the edge; alone, print it")
    .argument("<id>", "the source id", sourceIdArgument);
  for (const option of descriptionOptions(true)) command.addOption(option);
  command.action(async (id: string, options: DescriptionOptions, command: Command) => {
    const change = descriptionChange(command, options);
    const store = await openStore();
    // A typo must not look like a description that took: the id must name a source.
    await refusing(store.requireSource(id));
    if (!change) return shown(output, id, (await refusing(store.entry(id))).description);
    const entry = await refusing(store.amend(id, (entry) => withDescription(entry, redescribed(command, entry.description, change))));
    const description: Description = (entry.description as Description | undefined) ?? {};
    const edge = await invalidateAtEdge(id);
    output.result({ id, description, edge }, () => `${id} is now described as (edge invalidated):\n${descriptionText(description)}`);
  });
}

/** The entry's description as it stands, or why the decoders leave it out. */
function shown(output: Output, id: string, stored: unknown): void {
  const reading = readDescription(stored);
  if ("unreadable" in reading) {
    output.result({ id, description: stored, unreadable: reading.unreadable }, () => `${id}'s description cannot be read, so its manifest shows none: ${reading.unreadable}`);
    return;
  }
  output.result({ id, description: reading.description }, () => `${id} is described as:\n${descriptionText(reading.description)}`);
}
