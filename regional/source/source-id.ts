// Public source ids: plain file-name characters and no leading dot, so an id can never name a
// path outside a catalog's directory or prefix (no "/", no "..", no hidden files).

const SOURCE_ID = /^[A-Za-z0-9._-]+$/;

export function isValidSourceId(id: string): boolean {
  return SOURCE_ID.test(id) && !id.startsWith(".");
}
