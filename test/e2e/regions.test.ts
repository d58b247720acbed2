// A real decoder that names its region (TESSERA_REGION) registers itself, by its own heartbeats,
// with every admission shard of that region and serves the sources of it, through the edge in
// workerd (Miniflare). Two regions on one machine: "eu" has no decoder here, so a source both
// serve fails over to "us"; a decoder naming a region the edge lacks gets no work.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startDecoder, stopDecoder } from "../../infra/local/decoders";
import { startStack, type Stack } from "../../infra/local/stack";

let stack: Stack;
const SECRET = "regions-e2e-secret";

beforeAll(async () => {
  stack = await startStack({
    vars: { DECODER_SECRET: SECRET, REGIONS: "eu:weur,us:enam", ADMISSION_SHARDS: "2", SOURCE_REGIONS: "test-=eu|us;utm-=eu" },
    decoderEnv: { TESSERA_DECODER_SECRET: SECRET, TESSERA_REGION: "us", TESSERA_HEARTBEAT_INTERVAL: "1" },
  });
});
afterAll(() => stack?.stop());

const metrics = async () => (await fetch(`${stack.url}/metrics`)).text();
const sample = (text: string, name: string, region: string, shard: number) =>
  Number(new RegExp(`^tessera_admission_${name}\\{region="${region}",shard="${shard}"\\} (\\S+)$`, "m").exec(text)?.[1]);

it("registers with both shards of its region and serves its sources; a source only the empty region serves is a 503", async () => {
  const text = await metrics();
  for (const shard of [0, 1]) {
    expect(sample(text, "decoders_live", "us", shard)).toBe(1);
    expect(sample(text, "decoders_live", "eu", shard)).toBe(0);
    expect(sample(text, "shard_up", "us", shard)).toBe(1);
  }
  const tile = await fetch(`${stack.url}/iiif/3/test-pattern/0,0,256,256/256,/0/default.jpg`);
  expect(tile.status).toBe(200);
  expect(tile.headers.get("content-type")).toBe("image/jpeg");
  await tile.arrayBuffer();
  const lost = await fetch(`${stack.url}/iiif/3/utm-quadrants/info.json`);
  expect(lost.status).toBe(503);
  expect(lost.headers.get("retry-after")).toBe("1");
});

it("gives a decoder that names a region the edge lacks no work: its heartbeat is refused", async () => {
  const stray = await startDecoder({
    TESSERA_DECODER_SECRET: SECRET,
    TESSERA_DECODER_PORT: "0",
    TESSERA_EDGE_URL: stack.url,
    TESSERA_REGION: "mars",
    TESSERA_HEARTBEAT_INTERVAL: "1",
  });
  try {
    await new Promise((r) => setTimeout(r, 1500));
    const text = await metrics();
    // Without the check it would count in DEFAULT_REGION, "eu".
    expect(sample(text, "decoders_live", "us", 0) + sample(text, "decoders_live", "eu", 0)).toBe(1);
  } finally {
    await stopDecoder(stray);
  }
});
