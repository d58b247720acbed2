// One URL path segment as the edge reads it. Pure, so the grammar's fuzz tests decode paths
// exactly as the edge does.
import { badRequest } from "./errors";

/** A path segment, URL-decoded (clients send "^" as "%5E", "!" as "%21"). */
export function segment(raw: string | undefined, what: string): string {
  try {
    const value = decodeURIComponent(raw ?? "");
    if (value) return value;
  } catch {
    // fall through to the 400
  }
  throw badRequest(`${what} "${raw}" is not a valid URL-encoded path segment`);
}
