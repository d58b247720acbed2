// Who may see a source, as `tessera access` and `tessera publish --access` take it on the command
// line (a profile or `open`, and a degraded width) and say it back: the entry's `access` field.
import { Argument, InvalidArgumentError, Option, type Command } from "commander";
import { ACCESS_PROFILES, type Access, type AccessProfile } from "../shared/access";

/** A rule an entry is given: open, or a restriction (never one it cannot read). */
export type AccessRule = Exclude<Access, { unreadable: string }>;

const CHOICES = ["open", ...ACCESS_PROFILES];
const PROFILES_HELP = "open (anyone), active (a login), kiosk (a reading-room machine) or external (the operator's own front vouches)";

export const accessArgument = () => new Argument("<access>", PROFILES_HELP).choices(CHOICES);
export const accessOption = () => new Option("--access <access>", `who may see it: ${PROFILES_HELP}`).choices(CHOICES);
export const degradedWidthOption = () =>
  new Option("--degraded-width <px>", "how wide anyone may see a restricted source (default: not at all)").argParser(positiveWidth);

function positiveWidth(text: string): number {
  const width = Number(text);
  if (!/^[1-9][0-9]*$/.test(text) || !Number.isSafeInteger(width)) throw new InvalidArgumentError("a degraded width is a positive whole number of pixels");
  return width;
}

/** The rule `access` and `degradedWidth` state; a degraded width for an open source is a usage error (exit 2). */
export function accessRule(command: Command, access: string, degradedWidth: number | undefined): AccessRule {
  if (access !== "open") return { restriction: { profile: access as AccessProfile, ...(degradedWidth !== undefined && { degradedWidth }) } };
  if (degradedWidth !== undefined) command.error("error: --degraded-width is for a restricted source, not an open one", { exitCode: 2 });
  return { open: true };
}

/** The rule as the entry writes it, for --json. */
export const accessJson = (rule: AccessRule) => ("restriction" in rule ? rule.restriction : "open");

/** The rule in words. */
export function accessText(rule: AccessRule): string {
  if (!("restriction" in rule)) return "open to anyone";
  const { profile, degradedWidth } = rule.restriction;
  return `restricted (${profile}), ${degradedWidth === undefined ? "not shown to anyone else" : `${degradedWidth} px wide to anyone else`}`;
}
