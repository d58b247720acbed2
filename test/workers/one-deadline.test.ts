// One deadline from a request's arrival at the edge: a cold miss's metadata admission and its
// image admission (or /file transfer) share REQUEST_TIMEOUT (2 s here), rather than each having
// its own. In front of the late stand-in (test/support/workers-global-setup.ts), which holds each
// of the working decoder's answers LATE_MS (1.5 s): the metadata takes most of the deadline, and
// the next call is signed only what is left of it.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { TIME_LEFT_HEADER } from "../../edge/admission/leases";
import { forgetSourceInfo } from "../../edge/source-info";
import { DECODER } from "../../shared/protocol";
import { get, heartbeat, metric, settled } from "./helpers";

const REQUEST_TIMEOUT_MS = 2000;
const LATE_MS = Number(env.TEST_LATE_MS);
/** What the late decoder was sent: each request's path and signed deadline, in order. */
const sent = async () => (await (await fetch(`${env.TEST_LATE_DECODER_URL}/state`)).json()) as { path: string; timeoutMs: string }[];

beforeEach(async () => {
  await settled();
  expect((await heartbeat({ url: env.TEST_LATE_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("one deadline from the request's arrival", () => {
  it.each([
    ["an image", "/iiif/3/late/0,0,256,256/256,/0/default.jpg", "image"],
    ["/file", "/iiif/3/late/file", "file"],
  ])("answers a cold miss of %s 408 at REQUEST_TIMEOUT from its arrival, its decoder call signed only what the metadata left", async (_kind, path, route) => {
    await forgetSourceInfo({ id: "late" }); // cold: the metadata is asked of the decoder first
    const [timeouts, before] = [await metric("request_timeouts_total"), (await sent()).length];
    const started = Date.now();
    const res = await get(path);
    const took = Date.now() - started;
    expect(res.status).toBe(408);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toMatchObject({ error: "deadline", message: "the request exceeded REQUEST_TIMEOUT" });
    // A second admission with a REQUEST_TIMEOUT of its own would have let the decoder's late
    // answer (at twice LATE_MS) through; the deadline from arrival ends it first.
    expect(took).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(took).toBeLessThan(REQUEST_TIMEOUT_MS + 400);
    const [info, call] = (await sent()).slice(before);
    expect([info.path, call.path]).toEqual([expect.stringMatching(/^\/v1\/info\/late/), expect.stringMatching(new RegExp(`^/v1/${route}/late[/?]`))]);
    expect(Number(info.timeoutMs)).toBeLessThanOrEqual(REQUEST_TIMEOUT_MS);
    expect(Number(call.timeoutMs)).toBeLessThanOrEqual(REQUEST_TIMEOUT_MS - LATE_MS);
    expect(await metric("request_timeouts_total")).toBe(timeouts + 1);
  });

  it("answers 408 at once, counted, reaching no decoder, when nothing is left of the deadline", async () => {
    // What the edge sends the DO for a request whose earlier admissions took all of REQUEST_TIMEOUT.
    const shard = env.ADMISSION.get(env.ADMISSION.idFromName("default"));
    const [timeouts, before] = [await metric("request_timeouts_total"), (await sent()).length];
    const started = Date.now();
    const res = await shard.fetch(new Request(`https://admission${DECODER.info("late")}`, { headers: { [TIME_LEFT_HEADER]: "0" } }));
    expect(res.status).toBe(408);
    expect(await res.json()).toMatchObject({ error: "deadline", message: "the request exceeded REQUEST_TIMEOUT" });
    expect(Date.now() - started).toBeLessThan(300);
    expect(await metric("request_timeouts_total")).toBe(timeouts + 1);
    expect((await sent()).length).toBe(before);
    expect(await metric("permits_in_use")).toBe(0);
  });
});
