// Reading JSON documents that come from a publisher's bucket or any HTTP server (MosaicJSON,
// STAC): the few checks every such document's fields go through before either tier trusts them.
import { badRequest } from "../errors";

/** The document's root object; 400 `{name} is not valid JSON` or `must be a JSON object`. */
export function parseJsonObject(text: string, name: string): Record<string, unknown> {
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch {
    // The parser's own message quotes the text: not echoed back.
    throw badRequest(`${name} is not valid JSON`);
  }
  if (!isObject(root)) throw badRequest(`${name} must be a JSON object`);
  return root;
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** An own property only: a document without a field must not find one on a prototype. */
export const field = (o: Record<string, unknown>, name: string): unknown => (Object.hasOwn(o, name) ? o[name] : undefined);

/** A string from the document, safe to put in a message: JSON-quoted and cut short. */
export function quoted(s: string): string {
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);
}

/** Neither a store key nor a URL holds control characters; they would reach logs and labels. */
export const hasControlCharacter = (s: string) => /[\u0000-\u001f\u007f]/.test(s);
