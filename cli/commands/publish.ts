// tessera publish <file> --id <id> [--access <access> [--degraded-width <px>]]: validate, upload as
// a new version, pin it (with who may see it, when given), and make the edge serve it now. Prints
// the new version. Ctrl-C during the upload aborts it, leaving no parts.
import type { Command } from "commander";
import { accessJson, accessOption, accessRule, accessText, degradedWidthOption, type AccessRule } from "../access-rule";
import type { Output } from "../output";
import { sourceIdArgument } from "../source-id-argument";
import { progressReporter } from "../output";
import { invalidateAtEdge, openStore, refusing } from "../publishing";
import { Refusal } from "../refusal";

export function addPublishCommand(program: Command, output: Output): void {
  program
    .command("publish")
    .description("validate a COG, upload it as a new version of a source, pin that version and invalidate it at the edge")
    .argument("<file>", "the COG to publish")
    .requiredOption("--id <id>", "the source id (letters, digits, '.', '_', '-')", sourceIdArgument)
    .option("--no-invalidate", "pin only; the edge picks the version up within INFO_MAX_AGE")
    .addOption(accessOption())
    .addOption(degradedWidthOption())
    .action(async (file: string, options: PublishOptions, command: Command) => {
      const access = publishedAccess(command, options);
      const { checkCog } = await import("../cog-check");
      const report = await checkCog(file);
      if (!report.valid) {
        const problems = report.problems.map((p) => `${p.message} (fix: ${p.fix})`).join("; ");
        throw new Refusal(`${file} is not a COG the decoder serves: ${problems}`);
      }
      const store = openStore();
      // A restriction is written before the upload: a source with no pin serves its latest
      // version, which must not be open for a moment. Opening is written with the pin, once the
      // version is there to serve.
      if (access && "restriction" in access) await refusing(store.setAccess(options.id, access));
      const version = await upload(store, options.id, file);
      await refusing(store.pin(options.id, version, access));
      const edge = options.invalidate ? await invalidateAtEdge(options.id) : undefined;
      output.result({ id: options.id, version, edge, ...(access && { access: accessJson(access) }) }, () => {
        const rule = access ? `, ${accessText(access)}` : "";
        return `published ${options.id} version ${version}${rule}${edge ? " (edge invalidated)" : ""}`;
      });
    });
}

interface PublishOptions {
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

async function upload(store: ReturnType<typeof openStore>, id: string, file: string): Promise<string> {
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
