// tessera gc <id> [--grace-days <days>] [--delete]: in a bucket without versions (R2), removes a
// source's content-addressed versions that nothing needs: not the pinned one, not the one
// `rollback` would pin, none younger than the grace period. A dry run unless --delete is given:
// removing a version breaks its snapshot URLs, which caches and viewers may still hold.
import { InvalidArgumentError, type Command } from "commander";
import type { Output } from "../output";
import { sourceIdArgument } from "../source-id-argument";
import { openStore, refusing } from "../publishing";

/** A week: longer than any edge or browser cache holds a snapshot URL's answer unrevalidated. */
const DEFAULT_GRACE_DAYS = 7;
/** Ten years: a longer grace is a typo, and far enough to overflow a date is an error. */
const MAX_GRACE_DAYS = 3650;
const DAY_MS = 86_400_000;

/** Commander's parser for --grace-days: a number of days from 0 to MAX_GRACE_DAYS. */
export function graceDays(value: string): number {
  const days = Number(value);
  if (value.trim() === "" || !Number.isFinite(days) || days < 0 || days > MAX_GRACE_DAYS) {
    throw new InvalidArgumentError(`a number of days from 0 to ${MAX_GRACE_DAYS}`);
  }
  return days;
}

export function addGcCommand(program: Command, output: Output): void {
  program
    .command("gc")
    .description("list (or with --delete remove) a source's versions no pin needs, in a bucket without versions")
    .argument("<id>", "the source id", sourceIdArgument)
    .option("--grace-days <days>", "keep versions written less than this long ago", graceDays, DEFAULT_GRACE_DAYS)
    .option("--delete", "remove them (without it, only list what would be removed)", false)
    .action(async (id: string, options: { graceDays: number; delete: boolean }) => {
      const cutoff = new Date(Date.now() - options.graceDays * DAY_MS);
      const store = await openStore();
      const { removed, kept } = await refusing(store.gc(id, cutoff, !options.delete));
      const verb = options.delete ? "removed" : "would remove (dry run; --delete removes)";
      output.result({ id, dryRun: !options.delete, removed, kept }, () =>
        [`${id}: ${verb} ${removed.length}, keeping ${kept.length}`, ...removed.map((v) => `  ${v.version}  ${v.lastModified}  ${v.size} bytes`)].join("\n"),
      );
    });
}
