// The tessera command: a commander program with one subcommand per file of commands/, run by
// bin/tessera.js. Exit codes: 0 done; 1 refused (a Refusal: invalid file, unknown id or
// version) or failed; 2 usage (unknown command or option, missing argument, bad environment).

import { Command, CommanderError } from "commander";
import { ConfigError } from "../shared/config";
import { addAccessCommand } from "./commands/access";
import { addDescribeCommand } from "./commands/describe";
import { addGcCommand } from "./commands/gc";
import { addInvalidateCommand } from "./commands/invalidate";
import { addPinCommands } from "./commands/pin";
import { addPublishCommand } from "./commands/publish";
import { addValidateCommand } from "./commands/validate";
import { addVersionsCommand } from "./commands/versions";
import { Output } from "./output";
import { failureText, Refusal } from "./refusal";
import { ENVIRONMENT_HELP } from "./store-config";

const EXIT = { done: 0, refused: 1, failed: 1, usage: 2 } as const;

function tessera(output: Output): Command {
  const program = new Command("tessera")
    .description("Check and publish Cloud-Optimized GeoTIFFs for a Tessera IIIF server.")
    .option("--json", "print results as JSON on stdout, for programs")
    .configureHelp({ showGlobalOptions: true })
    // Commander would call process.exit itself; main() turns its errors into exit codes.
    .exitOverride()
    .showHelpAfterError("(tessera --help lists the commands; tessera help <command> explains one)")
    .addHelpText("after", `${ENVIRONMENT_HELP}\n\nExit status: 0 done, 1 refused (invalid file, unknown id or version) or failed, 2 usage.`)
    .hook("preAction", (_, command) => {
      output.json = command.optsWithGlobals().json === true;
    });
  addValidateCommand(program, output);
  addPublishCommand(program, output);
  addVersionsCommand(program, output);
  addPinCommands(program, output);
  addAccessCommand(program, output);
  addDescribeCommand(program, output);
  addInvalidateCommand(program, output);
  addGcCommand(program, output);
  return program;
}

/** Runs the command line `argv` (node, script, arguments…) and returns its exit code. */
async function main(argv: string[]): Promise<number> {
  const output = new Output();
  try {
    await tessera(output).parseAsync(argv);
    return EXIT.done;
  } catch (e) {
    return stopped(e, output);
  }
}

/** Reports why the command stopped and picks its exit code. */
function stopped(e: unknown, output: Output): number {
  // Commander has printed its own message (or the help asked for, which exits 0).
  if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.done : EXIT.usage;
  if (e instanceof ConfigError) {
    output.error("usage", e.message);
    return EXIT.usage;
  }
  if (e instanceof Refusal) {
    output.error("refused", e.message);
    return EXIT.refused;
  }
  output.error("failed", failureText(e));
  return EXIT.failed;
}

process.exitCode = await main(process.argv);
