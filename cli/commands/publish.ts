// tessera publish <file> --id <id> [--access <access> [--degraded-width <px>]] [--label …]
// [--summary …] [--rights …]: validate, upload as a new version, pin it (with who may see it and
// what it is, when given), and make the edge serve it now. Prints the new version. Ctrl-C during the upload aborts it, leaving no parts.
import type { Command } from "commander";
import { withAccess, withDescription, type CatalogEntry } from "../../shared/catalog";
import { accessJson, accessOption, accessRule, accessText, degradedWidthOption, type AccessRule } from "../access-rule";
import { descriptionChange, descriptionOptions, redescribed, type DescriptionChange, type DescriptionOptions } from "../description-options";
import type { Output } from "../output";
import { sourceIdArgument } from "../source-id-argument";
import { progressReporter } from "../output";
import { invalidateAtEdge, openStore, refusing } from "../publishing";
import { Refusal } from "../refusal";
import type { SourceStore } from "../source-store";

export function addPublishCommand(program: Command, output: Output): void {
  const publish = program
    .command("publish")
    .description("validate a COG, upload it as a new version of a source, pin that version and invalidate it at the edge")
    .argument("<file>", "the COG to publish")
    .requiredOption("--id <id>", "the source id (letters, digits, '.', '_', '-')", sourceIdArgument)
    .option("--no-invalidate", "pin only; the edge picks the version up within INFO_MAX_AGE")
    .addOption(accessOption())
    .addOption(degradedWidthOption());
  for (const option of descriptionOptions(false)) publish.addOption(option);
  publish.action(async (file: string, options: PublishOptions, command: Command) => {
    const access = publishedAccess(command, options);
    const described = descriptionChange(command, options);
    const { checkCog } = await import("../cog-check");
    const report = await checkCog(file);
    if (!report.valid) {
      const problems = report.problems.map((p) => `${p.message} (fix: ${p.fix})`).join("; ");
      throw new Refusal(`${file} is not a COG the decoder serves: ${problems}`);
    }
    const store = await openStore();
    // The description is merged into the entry's and checked before the upload: a mistake
    // there must not leave a new version published without it.
    if (described) redescribed(command, (await refusing(store.entry(options.id))).description, described);
    // A restriction is written before the upload: a source with no pin serves its latest
    // version, which must not be open for a moment. Opening is written with the pin, once the
    // version is there to serve.
    if (access && "restriction" in access) await refusing(store.setAccess(options.id, access));
    const version = await upload(store, options.id, file);
    const entry = await refusing(store.pin(options.id, version, (entry) => changed(command, entry, access, described)));
    const edge = options.invalidate ? await invalidateAtEdge(options.id) : undefined;
    const description = described && { description: entry.description ?? {} };
    output.result({ id: options.id, version, edge, ...(access && { access: accessJson(access) }), ...description }, () => {
      const rule = access ? `, ${accessText(access)}` : "";
      return `published ${options.id} version ${version}${rule}${described ? ", description updated" : ""}${edge ? " (edge invalidated)" : ""}`;
    });
  });
}

/** The entry with the access rule and description changes given, if any (a new version keeps the rest). */
function changed(command: Command, entry: CatalogEntry, access: AccessRule | undefined, described: DescriptionChange | undefined): CatalogEntry {
  const ruled = access ? withAccess(entry, access) : entry;
  return described ? withDescription(ruled, redescribed(command, ruled.description, described)) : ruled;
}

interface PublishOptions extends DescriptionOptions {
  id: string;
  invalidate: boolean;
  access?: string;
  degradedWidth?: number;
}

/** The rule --access gives the source, if any (undefined: its entry's rule is kept). */
function publishedAccess(command: Command, { access, degradedWidth }: PublishOptions): AccessRule | undefined {
  if (access !== undefined) return accessRule(command, access, degradedWidth);
  if (degradedWidth !== undefined) command.error("error: --degraded-width needs --access with a restricted profile", { exitCode: 2 });
  return undefined;
}

async function upload(store: SourceStore, id: string, file: string): Promise<string> {
  const { stat } = await import("node:fs/promises");
  const progress = progressReporter(`uploading ${file}`, (await stat(file)).size, process.stderr);
  const interrupted = new AbortController();
  const onSigint = () => interrupted.abort();
  process.once("SIGINT", onSigint);
  try {
    return await refusing(store.upload(id, file, (loaded) => progress.update(loaded), interrupted.signal));
  } finally {
    process.off("SIGINT", onSigint);
    progress.stop();
  }
}
