// Bearer-token checks for the operator's routes (/metrics, /admin/…). Tokens are compared as
// SHA-256 digests, so the comparison takes the same time whatever the client sent.
import { errorResponse, HttpError } from "../shared/errors";
import { constantTimeEqual } from "../shared/protocol";
import { sha256Hex } from "../shared/registration";

/** Whether the request carries `Authorization: Bearer <token>` (the scheme in any case, as HTTP's are). */
export async function bearerMatches(req: Request, token: string): Promise<boolean> {
  const presented = /^Bearer +(.+)$/i.exec(req.headers.get("authorization") ?? "")?.[1] ?? "";
  return constantTimeEqual(await sha256Hex(presented), await sha256Hex(token));
}

/**
 * The 401 for a missing or wrong token. Answered, not thrown: the router's failure handler
 * would let a shared cache keep a 401 as a client error.
 */
export const unauthorized = (message: string, realm: string) =>
  errorResponse(new HttpError("unauthorized", message), {
    "cache-control": "no-store",
    "www-authenticate": `Bearer realm="${realm}"`,
  });
