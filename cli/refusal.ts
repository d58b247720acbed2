import { HttpError } from "../shared/errors";

/**
 * The command refuses its input: an invalid file, an unknown id or version. The tessera
 * command exits 1 with the message alone, no stack trace: the input is wrong, not the program.
 */
export class Refusal extends Error {
  override readonly name = "Refusal";
}

/**
 * Why something failed, in full: the files and the store are the publisher's own, so what a
 * decoder's answer leaves out (a bucket and key, a file's label, a library's words) is said here.
 */
export const failureText = (e: unknown): string => (e instanceof HttpError ? (e.detail ?? e.message) : e instanceof Error ? e.message : String(e));
