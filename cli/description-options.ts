// What a source is, for people, as `tessera describe` and `tessera publish` take it on the command
// line (a label, a summary, rights, a required statement, metadata pairs, in one language) and
// say it back: the entry's `description`, which the manifest shows. A change is merged into the
// entry's description (a field given replaces that field) and checked with readDescription before
// anything is written, so a mistake is a usage error, never an entry the decoder must ignore.
import { InvalidArgumentError, Option, type Command } from "commander";
import { readDescription, type Description, type LabelValue, type LanguageMap } from "../shared/description";

type Field = keyof Description;
const FIELDS: Field[] = ["label", "summary", "rights", "requiredStatement", "metadata"];

/** A `label=value` argument, split at its first "=". */
type Pair = [label: string, value: string];

/** The options both commands read (describe has them all; publish the first ones). */
export interface DescriptionOptions {
  label?: string;
  summary?: string;
  rights?: string;
  language: string;
  requiredStatement?: Pair;
  metadata?: Pair[];
  clear?: Field[];
}

/** Fields set (replacing the entry's) and fields removed. */
export interface DescriptionChange {
  set: Description;
  clear: Field[];
}

function pair(text: string): Pair {
  const at = text.indexOf("=");
  if (at < 1 || at === text.length - 1) throw new InvalidArgumentError("expects label=value, such as Date=1850");
  return [text.slice(0, at), text.slice(at + 1)];
}

/** The options `tessera publish` takes; `all` adds those only `tessera describe` takes. */
export function descriptionOptions(all: boolean): Option[] {
  const some = [
    new Option("--label <text>", "the source's title, as viewers show it"),
    new Option("--summary <text>", "a sentence or two on what it is"),
    new Option("--rights <uri>", "its licence: a Creative Commons or RightsStatements.org URI"),
    new Option("--language <tag>", "the language of the texts given (a BCP 47 tag, or none)").default("en"),
  ];
  if (!all) return some;
  return [
    ...some,
    new Option("--required-statement <label=value>", "what a viewer must show with it, such as Attribution=Graz City Archive").argParser(pair),
    new Option("--metadata <label=value>", "a metadata pair (repeat it; the pairs given replace the list)").argParser(
      (text, previous: Pair[] = []) => [...previous, pair(text)],
    ),
    new Option("--clear <field>", "remove a field (repeatable)").choices(FIELDS).argParser((text, previous: Field[] = []) => {
      if (!FIELDS.includes(text as Field)) throw new InvalidArgumentError(`Allowed choices are ${FIELDS.join(", ")}.`);
      return [...previous, text as Field];
    }),
  ];
}

/**
 * The change the options make (undefined: none given). What they give is checked on its own
 * first, so a bad rights URI or language is a usage error (exit 2) before the store is asked.
 */
export function descriptionChange(command: Command, options: DescriptionOptions): DescriptionChange | undefined {
  const text = (value: string): LanguageMap => ({ [options.language]: [value] });
  const labelled = ([label, value]: Pair): LabelValue => ({ label: text(label), value: text(value) });
  const set: Description = {
    ...(options.label !== undefined && { label: text(options.label) }),
    ...(options.summary !== undefined && { summary: text(options.summary) }),
    ...(options.rights !== undefined && { rights: options.rights }),
    ...(options.requiredStatement && { requiredStatement: labelled(options.requiredStatement) }),
    ...(options.metadata && { metadata: options.metadata.map(labelled) }),
  };
  const clear = options.clear ?? [];
  if (Object.keys(set).length === 0 && clear.length === 0) return undefined;
  const both = clear.find((field) => field in set);
  if (both) usage(command, `--clear ${both} and a new ${both} together`);
  const reading = readDescription(set);
  if ("unreadable" in reading) usage(command, reading.unreadable);
  return { set, clear };
}

/** `current` (the entry's description as stored) with `change` made, checked as the decoder will read it. */
export function redescribed(command: Command, current: unknown, change: DescriptionChange): Description {
  // A description stored as something other than an object has nothing a change could keep.
  const base = typeof current === "object" && current !== null && !Array.isArray(current) ? { ...(current as Record<string, unknown>) } : {};
  for (const field of change.clear) delete base[field];
  const reading = readDescription({ ...base, ...change.set });
  if ("unreadable" in reading) return usage(command, `the description would not be readable: ${reading.unreadable} (--clear the field, or give it anew)`);
  return reading.description;
}

const usage = (command: Command, message: string): never => command.error(`error: ${message}`, { exitCode: 2 });

/** The description in words, one field a line. */
export function descriptionText(description: Description): string {
  const map = (m: LanguageMap) => Object.entries(m).map(([language, lines]) => `${lines.join(" / ")} [${language}]`).join("; ");
  const labelled = (p: LabelValue) => `${map(p.label)}: ${map(p.value)}`;
  const lines = [
    description.label && `label: ${map(description.label)}`,
    description.summary && `summary: ${map(description.summary)}`,
    description.requiredStatement && `required statement: ${labelled(description.requiredStatement)}`,
    description.rights && `rights: ${description.rights}`,
    ...(description.metadata ?? []).map((p) => `metadata: ${labelled(p)}`),
  ].filter((line): line is string => Boolean(line));
  return lines.length > 0 ? lines.map((line) => `  ${line}`).join("\n") : "  (none)";
}
