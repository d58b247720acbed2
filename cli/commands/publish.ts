// tessera publish <file> --id <id>: validate, upload as a new version, pin it, and make the edge
// serve it now. Prints the new version. Ctrl-C during the upload aborts it, leaving no parts.
import type { Command } from "commander";
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
    .action(async (file: string, options: { id: string; invalidate: boolean }) => {
      const { checkCog } = await import("../cog-check");
      const report = await checkCog(file);
      if (!report.valid) {
        const problems = report.problems.map((p) => `${p.message} (fix: ${p.fix})`).join("; ");
        throw new Refusal(`${file} is not a COG the decoder serves: ${problems}`);
      }
      const store = openStore();
      const version = await upload(store, options.id, file);
      await refusing(store.pin(options.id, version));
      const edge = options.invalidate ? await invalidateAtEdge(options.id) : undefined;
      output.result({ id: options.id, version, edge }, () => `published ${options.id} version ${version}${edge ? " (edge invalidated)" : ""}`);
    });
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
