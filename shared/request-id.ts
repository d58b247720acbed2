// One id per client request, carried from the edge through the admission DO to the decoder in
// X_REQUEST_ID, written in every log line of each tier, in every JSON error body and on every
// answer: an operator follows one slow tile by it. A client may bring its own, but only one of
// plain letters, digits, "-" and "_" (8 to 64): anything else (too long, CR/LF, quotes, unicode)
// is replaced, never echoed into a header or a log.

export const X_REQUEST_ID = "x-request-id";

const VALID = /^[A-Za-z0-9_-]{8,64}$/;

export const isValidRequestId = (value: string | null | undefined): value is string => typeof value === "string" && VALID.test(value);
