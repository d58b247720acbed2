// Public source ids: plain file-name characters and no leading dot, so an id can never name a
// path outside a catalog's directory or prefix (no "/", no "..", no hidden files). The decoder
// serves by it and the publisher's command writes by it.

import { notFound } from "./errors";

const SOURCE_ID = /^[A-Za-z0-9._-]+$/;

/** The rule in words, for a refusal. */
export const SOURCE_ID_RULE = "source ids are letters, digits, '.', '_' and '-', not starting with '.'";

export function isValidSourceId(id: string): boolean {
  return SOURCE_ID.test(id) && !id.startsWith(".");
}

/** `id` when it follows the id rule; else it names no source of any catalog (404), before any I/O. */
export function knownSourceId(id: string): string {
  if (!isValidSourceId(id)) throw notFound(`unknown source "${id}"`);
  return id;
}
