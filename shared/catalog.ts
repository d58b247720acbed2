// A source's catalog entry, kept in the bucket beside the source as one small JSON document
// (`{prefix}{id}.tessera.json`; in a versioned bucket it is versioned too), so decoders stay
// stateless and every decoder and edge location reads the same pin:
//   { "pin": "<version>", "policy": "RequireValidator", "pins": [{ "version": "…", "at": "…" }] }
// No entry, or no pin, means the latest version under RequireValidator. Rolling back re-points
// the pin to the one before it; no bytes are copied.
import { badGateway, HttpError } from "./errors";

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
   * Who may see the source: absent or "open", anyone. Any other value is a restriction this
   * deployment does not enforce yet, kept as it was written so no re-pin drops it, and the
   * source is withheld (assertServable): failing closed, never serving a restricted scan openly.
   */
  access?: unknown;
  policy: SnapshotPolicy;
  /** Every pin so far, oldest first. */
  pins: { version: string; at: string }[];
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
  const { pin, policy = NO_ENTRY.policy, pins = [], access } = value as Record<string, unknown>;
  if (pin !== undefined && (typeof pin !== "string" || pin === "")) throw bad("has a pin that is not a version");
  if (!POLICIES.includes(policy as SnapshotPolicy)) throw bad(`has policy ${JSON.stringify(policy)}, not ${POLICIES.join(" or ")}`);
  const valid = (p: unknown) =>
    typeof p === "object" && p !== null && typeof (p as { version?: unknown }).version === "string" && typeof (p as { at?: unknown }).at === "string";
  if (!Array.isArray(pins) || !pins.every(valid)) throw bad("has pins that are not {version, at} records");
  return { pin, policy: policy as SnapshotPolicy, pins: pins as CatalogEntry["pins"], ...(access !== undefined && { access }) };
}

/** Throws 501 for a source whose entry restricts who may see it: see CatalogEntry.access. */
export function assertServable(entry: CatalogEntry, id: string): void {
  if (entry.access === undefined || entry.access === "open") return;
  throw new HttpError("unsupported", `source "${id}" is restricted to some viewers, and this deployment does not enforce access restrictions: it is withheld`);
}

/** The entry with `version` pinned at `at` (ISO time). */
export function withPin(entry: CatalogEntry, version: string, at: string): CatalogEntry {
  return { ...entry, pin: version, pins: [...entry.pins, { version, at }] };
}

/** The entry pinned back to the version pinned before the current one. */
export function rolledBack(entry: CatalogEntry, at: string): CatalogEntry {
  const previous = [...entry.pins].reverse().find((p) => p.version !== entry.pin);
  if (!previous) throw new HttpError("not_found", "no earlier pin to roll back to");
  return withPin(entry, previous.version, at);
}
