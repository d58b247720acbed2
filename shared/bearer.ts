// Bearer tokens of the operator's routes: the edge's /metrics and /admin/…, the decoder's
// /metrics. Tokens are compared as SHA-256 digests, so the comparison takes the same time
// whatever the client sent, its length included.
import { constantTimeEqual } from "./protocol";
import { sha256Hex } from "./registration";

/** Whether an Authorization header value is `Bearer <token>` (the scheme in any case, as HTTP's are). */
export async function bearerMatches(authorization: string | null | undefined, token: string): Promise<boolean> {
  const presented = /^Bearer +(.+)$/i.exec(authorization ?? "")?.[1] ?? "";
  return constantTimeEqual(await sha256Hex(presented), await sha256Hex(token));
}

/** The headers of the 401 for a missing or wrong token: the challenge, and no cache may keep it. */
export const bearerChallenge = (realm: string) => ({
  "cache-control": "no-store",
  "www-authenticate": `Bearer realm="${realm}"`,
});
