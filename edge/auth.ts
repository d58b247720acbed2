// The edge's 401 for its operator's routes (/metrics, /admin/…), whose tokens shared/bearer.ts checks.
import { bearerChallenge } from "../shared/bearer";
import { errorResponse, HttpError } from "../shared/errors";

/**
 * The 401 for a missing or wrong token. Answered, not thrown: the router's failure handler
 * would let a shared cache keep a 401 as a client error.
 */
export const unauthorized = (message: string, realm: string) => errorResponse(new HttpError("unauthorized", message), bearerChallenge(realm));
