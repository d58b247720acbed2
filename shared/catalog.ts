// A source's catalog entry, kept in the bucket beside the source as one small JSON document
// (`{prefix}{id}.tessera.json`; in a versioned bucket it is versioned too), so decoders stay
// stateless and every decoder and edge location reads the same pin, access rule and description:
//   { "pin": "<version>", "policy": "RequireValidator", "pins": [{ "version": "…", "at": "…" }],
//     "access": { "profile": "active", "degradedWidth": 800 }, "description": { "label": { "en": ["…"] } },
//     "changed": { "access": "<ISO time>" } }
// No entry, or no pin, means the latest version under RequireValidator, open to anyone. Rolling
// back re-points the pin to the one before it; no bytes are copied.
import { readAccess, type Access, type Restriction } from "./access";
import { readDescription, type Description } from "./description";
import { badGateway, HttpError, unsupported } from "./errors";

/**
 * RequireValidator (the default): a source is opened only if it has a validator (an S3
 * VersionId, or a strong ETag where the bucket keeps none) that every later read is
 * conditional on. AssumeImmutable: the publisher promises the object never changes in place,
 * so one without a usable validator may be served; an explicit opt-in, never a fallback.
 */
export type SnapshotPolicy = "RequireValidator" | "AssumeImmutable";
const POLICIES: SnapshotPolicy[] = ["RequireValidator", "AssumeImmutable"];

export interface CatalogEntry {
  /** The pinned version; absent: the latest. */
  pin?: string;
  /**
   * Who may see the source, as readAccess reads it (absent or "open": anyone). Kept as it was
   * written, so a re-pin never drops a rule, not even one this version cannot read.
   */
  access?: unknown;
  /** What the source is, for people, as readDescription reads it; kept as written, like access. */
  description?: unknown;
  policy: SnapshotPolicy;
  /**
   * The pinned version's strong ETag, where the version is an object of its own with no VersionId
   * (a content-addressed one, in a bucket without versions): a decoder refuses other bytes there.
   */
  etag?: string;
  /** Every pin so far, oldest first. */
  pins: { version: string; at: string }[];
  /**
   * When a command last set each other field (`access`, `description`, `policy`: ISO times), by
   * which racing writes to a versioned bucket are merged. The publisher's bookkeeping: one that
   * cannot be read is left out, never a reason to refuse the entry.
   */
  changed?: Record<string, string>;
}

export const catalogKey = (prefix: string, id: string) => `${prefix}${id}.tessera.json`;

export const NO_ENTRY: CatalogEntry = { policy: "RequireValidator", pins: [] };

/** Parses a stored entry; a malformed one is the store's fault (502), `label` naming it in the log. */
export function parseCatalogEntry(text: string, label: string): CatalogEntry {
  const bad = (why: string) => badGateway(`the source's catalog entry ${why}`, `catalog entry ${label} ${why}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bad("is not JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw bad("is not an object");
  const { pin, policy = NO_ENTRY.policy, pins = [], access, description, etag, changed } = value as Record<string, unknown>;
  if (pin !== undefined && (typeof pin !== "string" || pin === "")) throw bad("has a pin that is not a version");
  if (etag !== undefined && (typeof etag !== "string" || !etag.startsWith('"'))) throw bad("has an etag that is not a strong ETag");
  if (!POLICIES.includes(policy as SnapshotPolicy)) throw bad(`has policy ${JSON.stringify(policy)}, not ${POLICIES.join(" or ")}`);
  const valid = (p: unknown) =>
    typeof p === "object" && p !== null && typeof (p as { version?: unknown }).version === "string" && typeof (p as { at?: unknown }).at === "string";
  if (!Array.isArray(pins) || !pins.every(valid)) throw bad("has pins that are not {version, at} records");
  return {
    pin,
    policy: policy as SnapshotPolicy,
    pins: pins as CatalogEntry["pins"],
    ...(etag !== undefined && { etag }),
    ...(access !== undefined && { access }),
    ...(description !== undefined && { description }),
    ...(isTimes(changed) && { changed }),
  };
}

const isTimes = (value: unknown): value is Record<string, string> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.values(value).every((t) => typeof t === "string");

/**
 * The restriction source `id` is served under (undefined: open to anyone), which the decoder
 * reports and the edge enforces. A rule this version cannot read withholds the source (501):
 * failing closed, never serving a restricted scan openly.
 */
export function restrictionOf(entry: CatalogEntry, id: string): Restriction | undefined {
  const access = readAccess(entry.access);
  if ("unreadable" in access) throw unsupported(`source "${id}" is withheld: its access rule cannot be read (${access.unreadable})`);
  return "restriction" in access ? access.restriction : undefined;
}

/** The entry with `access` as its rule; open is no field at all. */
export function withAccess(entry: CatalogEntry, access: Exclude<Access, { unreadable: string }>): CatalogEntry {
  const { access: _previous, ...rest } = entry;
  return "restriction" in access ? { ...rest, access: access.restriction } : rest;
}

/** What an entry says of its source for people: its description (absent when empty), or why it cannot be read. */
export interface EntryDescription {
  description?: Description;
  unreadableDescription?: string;
}

/**
 * The description an entry gives its source. Unlike an access rule, one that cannot be read
 * does not withhold the source: it is served without one, and the reason is logged.
 */
export function descriptionOf(entry: CatalogEntry): EntryDescription {
  const reading = readDescription(entry.description);
  if ("unreadable" in reading) return { unreadableDescription: reading.unreadable };
  return Object.keys(reading.description).length > 0 ? { description: reading.description } : {};
}

/** The entry with `description` as its description; an empty one is no field at all. */
export function withDescription(entry: CatalogEntry, description: Description): CatalogEntry {
  const { description: _previous, ...rest } = entry;
  return Object.keys(description).length > 0 ? { ...rest, description } : rest;
}

/** The entry with `version` pinned at `at` (ISO time), known by `etag` when it has no VersionId. */
export function withPin(entry: CatalogEntry, version: string, at: string, etag?: string): CatalogEntry {
  const { etag: _previous, ...rest } = entry;
  return { ...rest, pin: version, pins: [...entry.pins, { version, at }], ...(etag !== undefined && { etag }) };
}

/** The version pinned before the current one, which a rollback pins (withPin). */
export function rollbackVersion(entry: CatalogEntry): string {
  const previous = [...entry.pins].reverse().find((p) => p.version !== entry.pin);
  if (!previous) throw new HttpError("not_found", "no earlier pin to roll back to");
  return previous.version;
}

