// What a parser refuses: the message of the 400 that `run` throws (a test fails if it accepts).
import { expect } from "vitest";
import { HttpError } from "../../shared/errors";

export function badRequestMessage(run: () => unknown): string {
  try {
    run();
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    expect((e as HttpError).status).toBe(400);
    return (e as HttpError).message;
  }
  throw new Error("accepted");
}
