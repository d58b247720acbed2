// The HttpError a promise must fail with, for tests that then check its status and message.

import { expect } from "vitest";
import { HttpError } from "../../shared/errors";

export async function failure(p: Promise<unknown>): Promise<HttpError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    return e as HttpError;
  }
  throw new Error("expected a failure");
}
