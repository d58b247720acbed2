// Shared work (a source open, header and tile-table reads: done once for many requests) has its
// own deadline, and the S3 client its own connection and request timeouts: a stalled store is
// a prompt 504, never a wait until every request's own deadline. The store here is a local
// HTTP server that accepts connections and never answers.

import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { readConfig } from "../../regional/config";
import { HttpError } from "../../shared/errors";
import { DECODER, TIMEOUT_HEADER } from "../../shared/protocol";
import { refusalLog, signedGet, startDecoder } from "./regional-helpers";

let stalled: Server;
const sockets = new Set<Socket>();
let endpoint: string;

beforeAll(async () => {
  // The SDK takes credentials from the process environment, not from the decoder's config.
  vi.stubEnv("AWS_ACCESS_KEY_ID", "id");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "secret");
  stalled = createServer(() => {}); // reads the request, never answers
  stalled.on("connection", (s) => sockets.add(s));
  await new Promise<void>((resolve) => stalled.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(stalled.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => stalled.close(resolve));
  vi.unstubAllEnvs();
});

const s3Config = (env: Record<string, string> = {}) =>
  readConfig({
    TESSERA_DECODER_SECRET: "s",
    TESSERA_SOURCE: "s3",
    TESSERA_S3_ENDPOINT: endpoint,
    TESSERA_S3_BUCKET: "tessera",
    ...env,
  });

/**
 * An image of a pinned version: the open is the snapshot's shared one, not the request's own (the
 * info route reads the catalog for each request, for the entry's current access rule).
 */
const PINNED = DECODER.image("a", "full/100,100/0/default.jpg", "v1");

describe("a stalled store", () => {
  it("fails a shared open with 504 after the shared-work deadline, not each request's 408", async () => {
    const config = s3Config({ TESSERA_SHARED_WORK_TIMEOUT_MS: "60000" }); // the S3 client's own timeouts stay out of the way
    const d = await startDecoder(config.catalog, 3, { sharedWorkTimeoutMs: 300 });
    try {
      const started = performance.now();
      const answers = await Promise.all(
        [0, 1].map(() => signedGet(d, PINNED, undefined, { [TIMEOUT_HEADER]: "5000" })),
      );
      expect(answers.map((r) => r.status)).toEqual([504, 504]);
      expect(performance.now() - started).toBeLessThan(2000);
      // What was opened (a mosaic member's is a store key) is the log's to say, by the request id.
      const late = "opening the source took longer than 300 ms";
      expect(((await answers[0].json()) as { message: string }).message).toBe(late);
      expect(refusalLog(d, answers[0].headers.get("x-request-id"))).toMatchObject({ status: 504, detail: `a: ${late}` });
      // Retired, not remembered: the next request tries the store again, and is bounded again.
      expect((await signedGet(d, PINNED, undefined, { [TIMEOUT_HEADER]: "5000" })).status).toBe(504);
    } finally {
      await d.close();
    }
  });

  it("times out an S3 call made without any deadline of its own", async () => {
    const { catalog } = s3Config({ TESSERA_SHARED_WORK_TIMEOUT_MS: "300" });
    const started = performance.now();
    const err = await catalog.open("a", undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(504);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
