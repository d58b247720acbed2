// What a publisher says of a source for people, kept in its catalog entry's `description` and
// shown in its IIIF Presentation manifest: a label, a summary, the statement a viewer must show,
// the rights, and metadata pairs. Written as IIIF language maps, so the manifest carries them as
// they are:
//   "description": { "label": { "en": ["Map of Graz, 1850"] }, "rights": "http://creativecommons.org/licenses/by/4.0/",
//                    "requiredStatement": { "label": { "en": ["Attribution"] }, "value": { "en": ["Graz City Archive"] } },
//                    "metadata": [{ "label": { "en": ["Date"] }, "value": { "en": ["1850"] } }] }
// The decoder reads it from the entry and reports it in the source's metadata; anything it cannot
// read is refused when written (the tessera command) and, if written by hand, left out of the
// manifest with the reason in the decoder's log, never passed on.

/** A IIIF language map: language tag (or "none") to the value's lines. */
export type LanguageMap = Record<string, string[]>;

export interface LabelValue {
  label: LanguageMap;
  value: LanguageMap;
}

export interface Description {
  label?: LanguageMap;
  summary?: LanguageMap;
  requiredStatement?: LabelValue;
  /** A Creative Commons licence or RightsStatements.org statement URI (rightsUri checks it). */
  rights?: string;
  metadata?: LabelValue[];
}

/** Bounds that keep a manifest small whatever an entry holds. */
export const DESCRIPTION_LIMITS = { text: 2000, lines: 10, languages: 10, pairs: 50 } as const;

const RIGHTS_STATEMENTS = ["InC", "InC-OW-EU", "InC-EDU", "InC-NC", "InC-RUU", "NoC-CR", "NoC-NC", "NoC-OKLR", "NoC-US", "CNE", "UND", "NKC"];
const CC_LICENCE = /^http:\/\/creativecommons\.org\/(licenses\/(by|by-sa|by-nd|by-nc|by-nc-sa|by-nc-nd)\/(1\.0|2\.0|2\.5|3\.0|4\.0)(\/[a-z]{2})?|publicdomain\/(zero\/1\.0|mark\/1\.0))\/$/;
const RIGHTS_STATEMENT = new RegExp(`^http://rightsstatements\\.org/vocab/(${RIGHTS_STATEMENTS.join("|")})/1\\.0/$`);

/**
 * Why `uri` is not a rights value the Presentation API allows (a Creative Commons or
 * RightsStatements.org URI), or undefined. Only the http form: the URIs are identifiers, which
 * the specification and its validator compare as written, whatever scheme a browser is sent to.
 */
export function rightsProblem(uri: string): string | undefined {
  if (CC_LICENCE.test(uri) || RIGHTS_STATEMENT.test(uri)) return undefined;
  return `rights ${JSON.stringify(uri.slice(0, 200))} is not a Creative Commons licence URI (such as http://creativecommons.org/licenses/by/4.0/) or a RightsStatements.org URI (such as http://rightsstatements.org/vocab/InC/1.0/), in its http form`;
}

/** A description as an entry holds it, or why it cannot be read. */
export type DescriptionReading = { description: Description } | { unreadable: string };

/** Reads an entry's `description` field (absent: an empty description). */
export function readDescription(value: unknown): DescriptionReading {
  if (value === undefined) return { description: {} };
  if (!isObject(value)) return { unreadable: "description is not an object" };
  const { label, summary, requiredStatement, rights, metadata, ...extra } = value;
  const unknown = Object.keys(extra);
  if (unknown.length > 0) return { unreadable: `description has fields this version does not know: ${unknown.slice(0, 5).join(", ")}` };
  const problem =
    (label !== undefined && languageMapProblem(label, "label")) ||
    (summary !== undefined && languageMapProblem(summary, "summary")) ||
    (requiredStatement !== undefined && labelValueProblem(requiredStatement, "requiredStatement")) ||
    (rights !== undefined && (typeof rights === "string" ? rightsProblem(rights) : "rights is not a string")) ||
    (metadata !== undefined && metadataProblem(metadata));
  if (problem) return { unreadable: problem };
  return {
    description: {
      ...(label !== undefined && { label: label as LanguageMap }),
      ...(summary !== undefined && { summary: summary as LanguageMap }),
      ...(requiredStatement !== undefined && { requiredStatement: requiredStatement as LabelValue }),
      ...(rights !== undefined && { rights: rights as string }),
      ...(metadata !== undefined && { metadata: metadata as LabelValue[] }),
    },
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A language tag of letters and hyphens (or IIIF's "none"), short: BCP 47 also allows digits
 * ("es-419"), which the Presentation validator's keys do not, so a viewer may refuse them.
 */
const LANGUAGE = /^(none|[a-zA-Z]{2,3}(-[a-zA-Z]{1,8}){0,3})$/;

function languageMapProblem(value: unknown, what: string): string | undefined {
  const { text, lines, languages } = DESCRIPTION_LIMITS;
  if (!isObject(value)) return `${what} is not a language map such as {"en": ["…"]}`;
  const entries = Object.entries(value);
  if (entries.length === 0 || entries.length > languages) return `${what} has ${entries.length} languages, not 1 to ${languages}`;
  for (const [language, values] of entries) {
    if (!LANGUAGE.test(language)) return `${what} has a language ${JSON.stringify(language.slice(0, 40))} that is not a language tag (such as en, de-AT) or "none"`;
    if (!Array.isArray(values) || values.length === 0 || values.length > lines) return `${what}.${language} is not a list of 1 to ${lines} strings`;
    if (!values.every((v) => typeof v === "string" && v.length > 0 && v.length <= text)) return `${what}.${language} holds something other than strings of 1 to ${text} characters`;
  }
  return undefined;
}

function labelValueProblem(value: unknown, what: string): string | undefined {
  if (!isObject(value) || Object.keys(value).some((k) => k !== "label" && k !== "value")) return `${what} is not {"label": {…}, "value": {…}}`;
  return languageMapProblem(value.label, `${what}.label`) || languageMapProblem(value.value, `${what}.value`);
}

function metadataProblem(value: unknown): string | undefined {
  if (!Array.isArray(value) || value.length > DESCRIPTION_LIMITS.pairs) return `metadata is not a list of at most ${DESCRIPTION_LIMITS.pairs} {label, value} pairs`;
  for (const [i, pair] of value.entries()) {
    const problem = labelValueProblem(pair, `metadata[${i}]`);
    if (problem) return problem;
  }
  return undefined;
}
