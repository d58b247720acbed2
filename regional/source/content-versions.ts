// Versions of a source in a bucket that keeps none (versioning off, as on Cloudflare R2): each
// version is an immutable object named by the SHA-256 of its bytes,
// `{prefix}{id}.versions/{sha256}.tif`, written only if absent. The hash is the version's
// identity everywhere a version is named: the catalog entry's pin, `tessera versions`, and
// snapshot URLs (`{id}@{sha256}`). A folder per source keeps these objects apart from every
// other source's files; the listing of sources, which folds folders, lists the folder as its source.
import { isValidSourceId } from "../../shared/source-id.js";

const FOLDER_SUFFIX = ".versions/";

/** A content version: 64 lowercase hex digits. Nothing else (no "/", no "..") reaches a key. */
export const isContentVersion = (version: string): boolean => /^[0-9a-f]{64}$/.test(version);

/** The folder of `id`'s content versions. */
export const contentVersionsPrefix = (prefix: string, id: string): string => `${prefix}${id}${FOLDER_SUFFIX}`;

/** The source whose folder of content versions `name` (a listed folder, after the prefix) is, if it is one. */
export function idOfVersionsFolder(name: string): string | undefined {
  const id = name.endsWith(FOLDER_SUFFIX) ? name.slice(0, -FOLDER_SUFFIX.length) : undefined;
  return id !== undefined && isValidSourceId(id) ? id : undefined;
}

/** The key of `id`'s version `sha256` (which must be a content version). */
export function contentVersionKey(prefix: string, id: string, sha256: string): string {
  if (!isContentVersion(sha256)) throw new Error(`not a content version: ${JSON.stringify(sha256)}`);
  return `${contentVersionsPrefix(prefix, id)}${sha256}.tif`;
}

/** The content version a key in `id`'s folder holds, if it is one. */
export function contentVersionOfKey(prefix: string, id: string, key: string): string | undefined {
  const folder = contentVersionsPrefix(prefix, id);
  if (!key.startsWith(folder) || !key.endsWith(".tif")) return undefined;
  const version = key.slice(folder.length, -".tif".length);
  return isContentVersion(version) ? version : undefined;
}
