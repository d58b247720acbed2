// A decoder's 4xx about the edge's own signed headers (a limit it cannot read, a bad signature,
// a replayed id) is the service's fault, not the client's: 502, never stored. Through the skewed
// stand-in (test/support/workers-global-setup.ts), which re-signs every request with a deadline
// past the longest a decoder takes, in front of the real working decoder, which refuses it.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { forgetSourceInfo } from "../../edge/source-info";
import { cacheSourceInfo, get, heartbeat, metric, squareSource } from "./helpers";

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_SKEWED_DECODER_URL, capacity: 4 })).status).toBe(204);
});

/** Whether `res` is the service's 502, stored nowhere, telling the client nothing of the deployment. */
async function expectFault(res: Response, attempt: string): Promise<void> {
  expect(res.status, attempt).toBe(502);
  expect(res.headers.get("cache-control"), attempt).toBe("no-store");
  expect(res.headers.get("x-tessera-cache"), attempt).toBeNull(); // not stored, so never a hit
  const body = (await res.json()) as { error: string; message: string };
  expect(body.error, attempt).toBe("bad_gateway");
  expect(body.message, attempt).not.toMatch(/x-tessera|600000|127\.0\.0\.1/);
}

describe("a decoder's refusal of the signed headers", () => {
  it("answers an image as 502, never stored as the client's 400", async () => {
    await cacheSourceInfo(squareSource("skewed-image", [1024, 512])); // only the image reaches the decoder
    for (const attempt of ["first", "second"]) await expectFault(await get("/iiif/3/skewed-image/0,0,256,256/256,/0/default.jpg"), attempt);
    expect(await metric("permits_in_use")).toBe(0);
  });

  it("answers info.json (the metadata's admission) as 502, never stored", async () => {
    await forgetSourceInfo({ id: "skewed-info" });
    for (const attempt of ["first", "second"]) await expectFault(await get("/iiif/3/skewed-info/info.json"), attempt);
    expect(await metric("permits_in_use")).toBe(0);
  });
});
