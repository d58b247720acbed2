// Who may see a source, as its catalog entry says and the edge enforces (IIIF Authorization
// Flow 2.0). The decoder reads the rule from the entry and reports it in the source's metadata;
// it never decides who sees what.
//   "access": "open"                                       anyone (also: no field at all)
//   "access": { "profile": "active", "degradedWidth": 800 } restricted, a login; 800 px for anyone
// The profiles are the specification's: `active` (the user logs in), `kiosk` (a reading-room
// machine, by its address), `external` (the operator's own front vouches: an address range or
// a header it sets).

export const ACCESS_PROFILES = ["active", "kiosk", "external"] as const;
export type AccessProfile = (typeof ACCESS_PROFILES)[number];

/** A restricted source: who may see it whole, and how wide anyone may see it. */
export interface Restriction {
  profile: AccessProfile;
  /** The width of the degraded image anyone may see; absent: anonymous clients see nothing. */
  degradedWidth?: number;
}

/** Access as a catalog entry states it: open, a restriction, or something this version cannot read. */
export type Access = { open: true } | { restriction: Restriction } | { unreadable: string };

/** Reads an entry's `access` field. What it cannot read is kept as a reason, so the source is withheld, never opened. */
export function readAccess(value: unknown): Access {
  if (value === undefined || value === "open") return { open: true };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { unreadable: `access ${JSON.stringify(value)} is neither "open" nor a restriction` };
  }
  const { profile, degradedWidth, ...extra } = value as Record<string, unknown>;
  if (!ACCESS_PROFILES.includes(profile as AccessProfile)) {
    return { unreadable: `access profile ${JSON.stringify(profile)} is not ${ACCESS_PROFILES.join(", ")}` };
  }
  if (degradedWidth !== undefined && !(Number.isInteger(degradedWidth) && (degradedWidth as number) > 0)) {
    return { unreadable: `degradedWidth ${JSON.stringify(degradedWidth)} is not a positive whole number of pixels` };
  }
  const unknown = Object.keys(extra);
  if (unknown.length > 0) return { unreadable: `access has fields this version does not know: ${unknown.join(", ")}` };
  return { restriction: { profile: profile as AccessProfile, ...(degradedWidth !== undefined && { degradedWidth: degradedWidth as number }) } };
}
