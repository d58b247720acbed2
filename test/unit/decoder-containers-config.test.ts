// The decoder as a Cloudflare Container, as configured: wrangler.toml's [env.containers] read by
// wrangler itself (the same Worker, its vars repeated because wrangler does not inherit them),
// the instance types' settings and the environment each container's decoder starts with.
import { unstable_readConfig } from "wrangler";
import { describe, expect, it } from "vitest";
import { containerEnv, containerSettings } from "../../edge/containers/settings";
import { parseHeartbeat } from "../../shared/registration";

/** What these tests read of wrangler's resolved configuration. */
interface Resolved {
  vars: Record<string, unknown>;
  durable_objects: { bindings: { name: string; class_name: string }[] };
  containers?: { class_name: string; instance_type?: unknown; max_instances?: number }[];
  migrations: { new_sqlite_classes?: string[] }[];
}
const config = (env?: string) => unstable_readConfig({ config: "wrangler.toml", env }) as unknown as Resolved;
const CONTAINER_VARS = /^DECODER_CONTAINER_/;
const without = (vars: Record<string, unknown>, drop: RegExp) => Object.fromEntries(Object.entries(vars).filter(([k]) => !drop.test(k)));

describe("wrangler.toml's decoder containers", () => {
  it("runs none by default: no [[containers]], no binding, a count of 0", () => {
    const plain = config();
    expect(plain.containers ?? []).toEqual([]);
    expect(plain.durable_objects.bindings.map((b) => b.name)).toEqual(["ADMISSION"]);
    expect(plain.vars.DECODER_CONTAINER_COUNT).toBe("0");
    expect(containerSettings(plain.vars as Record<string, string>)).toBeUndefined();
  });

  it("repeats every variable of the default Worker in [env.containers] with the same value", () => {
    const plain = config().vars as Record<string, unknown>;
    const containers = config("containers").vars as Record<string, unknown>;
    expect(without(containers, CONTAINER_VARS)).toEqual(without(plain, CONTAINER_VARS));
  });

  it("binds the containers' DO class and names the instance type wrangler deploys, with room for every container", () => {
    const c = config("containers");
    expect(c.durable_objects.bindings.map((b) => [b.name, b.class_name])).toEqual([["ADMISSION", "AdmissionDO"], ["DECODER_CONTAINER", "DecoderContainer"]]);
    const [app] = c.containers!;
    expect(app.class_name).toBe("DecoderContainer");
    const settings = containerSettings(c.vars as Record<string, string>)!;
    expect(app.instance_type).toBe(settings.instanceType);
    expect(settings.count).toBeLessThanOrEqual(app.max_instances!);
    expect(c.migrations.flatMap((m) => m.new_sqlite_classes ?? [])).toContain("DecoderContainer");
  });
});

describe("container settings", () => {
  it("takes capacity and memory from the instance type", () => {
    expect(containerSettings({ DECODER_CONTAINER_COUNT: "3", DECODER_CONTAINER_INSTANCE: "standard-4" })).toEqual({
      count: 3, instanceType: "standard-4", capacity: 4, memoryBytes: 12 * 1024 ** 3, region: undefined,
    });
    expect(containerSettings({ DECODER_CONTAINER_COUNT: "1", DECODER_CONTAINER_INSTANCE: "basic", DECODER_CONTAINER_REGION: "eu" })).toMatchObject({ capacity: 1, memoryBytes: 1024 ** 3, region: "eu" });
  });

  it("names the variable that is wrong", () => {
    expect(() => containerSettings({ DECODER_CONTAINER_COUNT: "2", DECODER_CONTAINER_INSTANCE: "huge" })).toThrow(/DECODER_CONTAINER_INSTANCE must be one of lite, basic/);
    expect(() => containerSettings({ DECODER_CONTAINER_COUNT: "2", DECODER_CONTAINER_INSTANCE: "lite" })).toThrow(/lite has 256 MiB; a decoder needs at least 1024/);
    expect(() => containerSettings({ DECODER_CONTAINER_COUNT: "-1", DECODER_CONTAINER_INSTANCE: "basic" })).toThrow(/DECODER_CONTAINER_COUNT/);
    expect(() => containerSettings({ DECODER_CONTAINER_COUNT: "1", DECODER_CONTAINER_INSTANCE: "basic", DECODER_CONTAINER_REGION: "EU west" })).toThrow(/DECODER_CONTAINER_REGION/);
  });

  it("gives the decoder the operator's TESSERA_ and AWS_ variables, its budgets sized to a small instance's memory, and nothing else of the Worker's", () => {
    const basic = containerSettings({ DECODER_CONTAINER_COUNT: "1", DECODER_CONTAINER_INSTANCE: "basic" })!;
    const vars = { TESSERA_S3_BUCKET: "maps", AWS_SECRET_ACCESS_KEY: "k", ADMIN_TOKEN: "no", DECODER_SECRET: "s", ADMISSION: {} };
    expect(containerEnv(vars, "s", basic)).toEqual({
      TESSERA_S3_BUCKET: "maps",
      AWS_SECRET_ACCESS_KEY: "k",
      TESSERA_DECODER_SECRET: "s",
      TESSERA_DECODER_CAPACITY: "1",
      TESSERA_DECODER_MEMORY_LIMIT: String(1024 ** 3),
      UV_THREADPOOL_SIZE: "1",
      TESSERA_WORK_BUDGET_MB: "256",
      TESSERA_BLOCK_CACHE_MB: "128",
    });
    // The operator's own budget wins over the instance's share.
    expect(containerEnv({ TESSERA_WORK_BUDGET_MB: "100" }, "s", basic).TESSERA_WORK_BUDGET_MB).toBe("100");
  });
});

describe("a container's URL in a heartbeat", () => {
  const beat = (url: string) => JSON.stringify({ url, capacity: 1, memoryBytes: 1 });
  it("is taken only where containers' DOs deliver heartbeats, and only a plain name", () => {
    expect(parseHeartbeat(beat("container://decoder-0"), { containers: true }).url).toBe("container://decoder-0");
    expect(() => parseHeartbeat(beat("container://decoder-0"))).toThrow(/http\(s\) URL/);
    for (const bad of ["container://../x", "container://a/b", "container://", "container://A", `container://${"a".repeat(64)}`]) {
      expect(() => parseHeartbeat(beat(bad), { containers: true })).toThrow(/http\(s\) URL/);
    }
  });
});
