// Decoders run as Cloudflare Containers, through the real Worker, admission DO and containers'
// DOs in workerd. Cloudflare's container runtime cannot exist here: a stand-in runs each
// container's decoder as a local process of the real decoder, started with the environment the
// container's DO gives it (test/support/container-stand-in.ts). Two containers of standard-2
// (1 vCPU, 6 GiB), no decoder registered otherwise (vitest.config.ts, workers-containers).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { get, heartbeat, labelOf, metric, pngSize } from "../helpers";

const TILE = "/iiif/3/test-pattern/0,0,256,256/128,/0/default.png";
const standIn = (name: string, rest = "") => `${env.TEST_CONTAINER_STAND_IN}/containers/${name}${rest}`;
const starts = async (name: string) => (await (await fetch(standIn(name, "/starts"))).json()) as Record<string, string>[];

/** Polls until `check` holds, for at most `ms`. */
async function until(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not so after ${ms} ms`);
    await scheduler.wait(200);
  }
}

const live = () => metric("decoders_live");

describe("decoders run as Cloudflare Containers (runtime stood in by local decoder processes)", () => {
  it("are started by the first request that finds no decoder, which gets 503 + Retry-After, then registered with the instance type's capacity and memory", async () => {
    const first = await get(TILE);
    expect(first.status).toBe(503);
    expect(first.headers.get("retry-after")).toBe("1");
    await until(async () => (await live()) === 2);
    // standard-2: one decode at a time each, 6 GiB each.
    expect(await metric("permits_total")).toBe(2);
    const text = await (await get("/metrics")).text();
    for (const name of ["decoder-0", "decoder-1"]) expect(text).toContain(`decoder="${await labelOf(`container://${name}`)}"`);
    const res = await get(TILE);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(pngSize(new Uint8Array(await res.arrayBuffer()))).toEqual([128, 128]);
  });

  it("start each decoder with the shared secret, the instance's capacity and memory, and the operator's TESSERA_ variables, nothing else of the Worker's", async () => {
    await until(async () => (await live()) === 2);
    const [env0] = await starts("decoder-0");
    expect(env0).toMatchObject({
      TESSERA_DECODER_SECRET: env.DECODER_SECRET,
      TESSERA_DECODER_CAPACITY: "1",
      UV_THREADPOOL_SIZE: "1",
      TESSERA_DECODER_MEMORY_LIMIT: String(6 * 1024 ** 3),
      TESSERA_WORK_BUDGET_MB: "512",
      TESSERA_BLOCK_CACHE_MB: "256",
      TESSERA_METRICS_TOKEN: "containers-metrics-token",
    });
    expect(Object.keys(env0).filter((k) => !/^(TESSERA|AWS)_|^UV_THREADPOOL_SIZE$/.test(k))).toEqual([]);
    expect(env0).not.toHaveProperty("ADMIN_TOKEN");
  });

  it("serve many tiles across both containers, every one whole", async () => {
    await until(async () => (await live()) === 2);
    const answers = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => get(`/iiif/3/test-pattern/${i * 64},0,64,64/64,/0/default.png`)));
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(pngSize(new Uint8Array(await res.arrayBuffer()))).toEqual([64, 64]);
    }
    expect(await metric("permits_in_use")).toBe(0);
  });

  it("stream a source's file from a container", async () => {
    await until(async () => (await live()) === 2);
    const res = await get("/iiif/3/test-pattern/file");
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(Number(res.headers.get("content-length")));
  });

  it("reach every container's decoder with an invalidation", async () => {
    await until(async () => (await live()) === 2);
    const res = await get("/admin/sources/test-pattern/invalidate", { method: "POST", headers: { authorization: "Bearer admin-test-token" } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ decoders: 2, invalidated: 2 });
  });

  it("report a container that exits as leaving, send its requests to the other, and start it again", async () => {
    await until(async () => (await live()) === 2);
    const before = (await starts("decoder-0")).length;
    await fetch(standIn("decoder-0", "/exit"), { method: "POST" });
    // Whatever reaches decoder-0's DO before its next beat is answered as by a draining decoder: it goes to decoder-1.
    for (const i of [0, 1, 2, 3]) expect((await get(`/iiif/3/test-pattern/${i * 32},128,32,32/32,/0/default.png`)).status).toBe(200);
    await until(async () => (await starts("decoder-0")).length === before + 1);
    await until(async () => (await live()) === 2);
    expect((await get(TILE.replace("128,", "96,"))).status).toBe(200);
  });

  it("stop a container that is no longer one of the deployment's (DECODER_CONTAINER_COUNT lowered) and never start it again", async () => {
    // decoder-5, running as if started when the count was higher.
    await fetch(standIn("decoder-5"), { method: "POST", body: JSON.stringify({ TESSERA_DECODER_SECRET: env.DECODER_SECRET }) });
    expect(await (await fetch(standIn("decoder-5"))).json()).toMatchObject({ running: true });
    const stub = env.DECODER_CONTAINER!.get(env.DECODER_CONTAINER!.idFromName("decoder-5"));
    expect((await stub.fetch("http://container/__container/wake", { method: "POST" })).status).toBe(204);
    expect(await (await fetch(standIn("decoder-5"))).json()).toMatchObject({ running: false });
    // A request reaching it is one it did nothing with; it starts nothing.
    const res = await stub.fetch("http://container/health");
    expect([res.status, res.headers.has("x-tessera-draining")]).toEqual([503, true]);
    await scheduler.wait(300);
    expect(await starts("decoder-5")).toHaveLength(1);
    expect(await (await fetch(standIn("decoder-5"))).json()).toMatchObject({ running: false });
  });

  it("cannot be registered by a heartbeat over HTTP: a container's URL there is a 400", async () => {
    for (const url of ["container://decoder-0", "container://evil", "container://../x"]) {
      expect((await heartbeat({ url })).status).toBe(400);
    }
  });
});
