// The work a request buys, across the tiers: the edge classifies by it as by memory, the DO grants
// it, and a request one decoder core could not finish within REQUEST_TIMEOUT (2 s here) is refused
// before any pixel is read; a decode the decoder sends back for a larger grant is signed afresh
// when it is sent again. In front of the working decoder (its sources: workers-global-setup.ts);
// the figures each case needs come from the one formula both tiers use (shared/work.ts).
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { ADMISSION_DEFAULTS } from "../../shared/admission-config";
import { forgetSourceInfo } from "../../edge/source-info";
import { PARTITION_HEADER } from "../../shared/cost";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { imageWork } from "../../shared/work";
import { get, heartbeat, metric } from "./helpers";

const decoder = () => env.TEST_WORKING_DECODER_URL;

/** A sample of the working decoder's own /metrics (0 when absent). */
async function decoderMetric(name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${decoder()}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(" ")[1]) : 0;
}

/** The work of a whole-image render of the 1000² JPEG COG `slow` at `width`² in `format`. */
const slowWork = (width: number, format: "gif" | "jpg") =>
  imageWork({
    levels: [{ width: 1000, height: 1000 }, { width: 500, height: 500 }],
    tileWidth: 512,
    tileHeight: 512,
    channels: 3,
    codec: "jpeg",
    region: { x: 0, y: 0, w: 1000, h: 1000 },
    width,
    height: width,
    degrees: 0,
    format,
  });

beforeEach(async () => {
  expect((await heartbeat({ url: decoder(), capacity: 4, memoryBytes: 4_000_000_000 })).status).toBe(204);
});

describe("work across the tiers", () => {
  it("admits as a full a request whose work alone reaches LARGE_DECODE_THRESHOLD_WORK, and both tiers agree", async () => {
    // A GIF (its palette search is the dearest encode) of a few MB of memory: a tile by its bytes.
    const work = slowWork(600, "gif");
    expect(work).toBeGreaterThanOrEqual(ADMISSION_DEFAULTS.LARGE_DECODE_THRESHOLD_WORK);
    expect(work).toBeLessThan(2000);
    const [fulls, disagreements] = [await decoderMetric("tessera_decoder_decodes_total", '{partition="full"}'), await metric("classifier_disagreement_total")];
    const res = await get("/iiif/3/slow/full/600,/0/default.gif");
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/gif");
    expect(await decoderMetric("tessera_decoder_decodes_total", '{partition="full"}')).toBe(fulls + 1);
    expect(await metric("classifier_disagreement_total")).toBe(disagreements);
  });

  it("refuses with 413 at the edge, before the DO or a decoder, a request one core could not finish within REQUEST_TIMEOUT", async () => {
    expect(slowWork(1000, "gif")).toBeGreaterThan(2000);
    expect((await get("/iiif/3/slow/info.json")).status).toBe(200); // the edge knows its channels and codec
    const decoded = await decoderMetric("tessera_decoder_blocks_decoded_total");
    const seen = await decoderMetric("tessera_decoder_requests_total", '{route="image",status="413"}');
    const res = await get("/iiif/3/slow/full/max/0/default.gif");
    expect(res.status).toBe(413);
    expect(res.headers.get("retry-after")).toBeNull();
    const { error, message } = (await res.json()) as { error: string; message: string };
    expect(error).toBe("too_large");
    expect(message).toMatch(/would take about [\d.]+ s of one decoder core, more than the 2 s a request may take; ask for a smaller size/);
    expect(await decoderMetric("tessera_decoder_blocks_decoded_total")).toBe(decoded);
    // The edge's estimate is the decoder's (the same formula, channels and codec): a flood of
    // such URLs costs neither the DO, which every admission of the shard goes through, nor a decoder.
    expect(await decoderMetric("tessera_decoder_requests_total", '{route="image",status="413"}')).toBe(seen);
    expect(await metric("permits_in_use")).toBe(0);
  });

  it("admits info.json as a tile: answered where full_max is 0 and every full is shed", async () => {
    expect((await heartbeat({ url: decoder(), capacity: 1 })).status).toBe(204); // 1 permit: full_max 0
    await forgetSourceInfo({ id: "slow" }); // so that this info.json is admitted, not a cache hit
    const [shed, released] = [await metric("full_shed_total"), await metric("released_total")];
    const res = await get("/iiif/3/slow/info.json");
    expect(res.status).toBe(200);
    expect([await metric("full_shed_total"), await metric("released_total")]).toEqual([shed, released + 1]);
    expect((await get("/iiif/3/slow/full/610,/0/default.gif")).status).toBe(503); // a full, uncached, here
  });

  it("declares a finite maxArea and refuses an upscale past it with 400 at the edge, before admission", async () => {
    const info = (await (await get("/iiif/3/slow/info.json")).json()) as { maxArea?: number };
    expect(info.maxArea).toBeGreaterThan(1000 * 1000);
    const side = Math.ceil(Math.sqrt(info.maxArea!)) + 10;
    const requests = await decoderMetric("tessera_decoder_requests_total", '{route="image",status="200"}');
    const res = await get(`/iiif/3/slow/full/%5E${side},${side}/0/default.jpg`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/exceeds the server's maxWidth\/maxHeight\/maxArea/);
    expect(await decoderMetric("tessera_decoder_requests_total", '{route="image",status="200"}')).toBe(requests);
  });

  it("sends a decode the decoder gave back for a larger grant once more, signed afresh, and the same decoder takes it", async () => {
    // Straight to the DO, as a tile: the decoder's estimate (a full) exceeds the tile grant.
    const admission = env.ADMISSION.get(env.ADMISSION.idFromName("default"));
    const info = await admission.fetch(new Request(`https://admission${DECODER.info("published")}`));
    expect(info.status).toBe(200);
    const { version } = (await info.json()) as SourceInfo;
    const [fulls, refused, disagreements] = [
      await decoderMetric("tessera_decoder_decodes_total", '{partition="full"}'),
      await decoderMetric("tessera_decoder_requests_total", '{route="image",status="401"}'),
      await metric("classifier_disagreement_total"),
    ];
    const path = DECODER.image("published", "full/%5E2500,/0/default.jpg", version);
    const res = await admission.fetch(new Request(`https://admission${path}`, { headers: { [PARTITION_HEADER]: "tile" } }));
    expect(res.status, await res.clone().text()).toBe(200);
    await res.arrayBuffer();
    expect(await metric("classifier_disagreement_total")).toBe(disagreements + 1);
    expect(await decoderMetric("tessera_decoder_decodes_total", '{partition="full"}')).toBe(fulls + 1);
    expect(await decoderMetric("tessera_decoder_requests_total", '{route="image",status="401"}')).toBe(refused);
  });
});
