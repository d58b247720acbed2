// A source's own file opened by store key (a mosaic's member) rather than by its id is read only
// if the source's catalog entry leaves it open: a restricted source is served only under its id,
// where the edge checks who asks, and a mosaic naming its key would show it to anyone.
import { readAccess } from "../../shared/access";
import type { CatalogEntry } from "../../shared/catalog";
import { refusal } from "./access-policy";

/**
 * Throws the access policy's refusal of the object `label` unless source `id`'s entry is open: the
 * client is told no more than of any refused asset, the log why.
 */
export function assertOpenFile(entry: CatalogEntry, id: string, label: string): void {
  const access = readAccess(entry.access);
  if ("open" in access) return;
  const rule =
    "restriction" in access ? `restricts who may see it (profile ${access.restriction.profile})` : `has an access rule this version cannot read (${access.unreadable})`;
  throw refusal(label, `it is a file of source "${id}", whose catalog entry ${rule}`);
}
