// REGIONS, ADMISSION_SHARDS, SOURCE_REGIONS and DEFAULT_REGION as the edge parses them, the
// hash that picks a source's shard, and each shard's share of a region's permits and memory.
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../shared/config";
import { decoderRegion, fnv1a, placement, regionsFor, shardFromName, shardName, shardOf, shardShare } from "../../shared/regions";
import { parseHeartbeat } from "../../shared/registration";
import { readHeartbeatConfig } from "../../regional/runtime/heartbeat";

const threeRegions = { REGIONS: "eu:weur, us:enam,ap:apac", ADMISSION_SHARDS: "4", SOURCE_REGIONS: "maps/=us|eu;maps/asia/=ap;scans/=us" };

describe("placement config", () => {
  it("without any of the variables is one implicit region of one shard, the DO named default", () => {
    const p = placement({});
    expect(p).toMatchObject({ configured: false, shards: 1, defaultRegion: "default", regions: [{ name: "default" }] });
    expect(shardName(p, "default", 0)).toBe("default");
    expect(regionsFor(p, "anything")).toEqual(["default"]);
    expect(placement({ REGIONS: "", ADMISSION_SHARDS: "", SOURCE_REGIONS: "", DEFAULT_REGION: "" })).toEqual(p);
  });

  it("reads regions nearest first with their location hints, and names shards region/shard", () => {
    const p = placement(threeRegions);
    expect(p.regions).toEqual([
      { name: "eu", locationHint: "weur" },
      { name: "us", locationHint: "enam" },
      { name: "ap", locationHint: "apac" },
    ]);
    expect(p.defaultRegion).toBe("eu");
    expect(shardName(p, "us", 3)).toBe("us/3");
    // Shards without regions leave the name "default" to the lone DO of before.
    expect(shardName(placement({ ADMISSION_SHARDS: "2" }), "default", 1)).toBe("default/1");
  });

  it("sends a source to the regions of its longest prefix, nearest first, else to DEFAULT_REGION", () => {
    const p = placement({ ...threeRegions, DEFAULT_REGION: "us" });
    expect(regionsFor(p, "maps/alps")).toEqual(["eu", "us"]); // REGIONS order, not the rule's
    expect(regionsFor(p, "maps/asia/fuji")).toEqual(["ap"]);
    expect(regionsFor(p, "scans/book-1")).toEqual(["us"]);
    expect(regionsFor(p, "other")).toEqual(["us"]);
  });

  it("stops on a bad value with a message naming the variable", () => {
    const bad: [Record<string, string>, string, RegExp][] = [
      [{ REGIONS: "eu" }, "REGIONS", /needs a location hint/],
      [{ REGIONS: "eu:mars" }, "REGIONS", /one of wnam, enam/],
      [{ REGIONS: "EU:weur" }, "REGIONS", /name:locationHint/],
      [{ REGIONS: "eu:weur:x" }, "REGIONS", /name:locationHint/],
      [{ REGIONS: "eu:weur,eu:eeur" }, "REGIONS", /twice/],
      [{ ADMISSION_SHARDS: "0" }, "ADMISSION_SHARDS", /from 1 to 64/],
      [{ ADMISSION_SHARDS: "65" }, "ADMISSION_SHARDS", /from 1 to 64/],
      [{ ADMISSION_SHARDS: "two" }, "ADMISSION_SHARDS", /whole number/],
      [{ REGIONS: "eu:weur", DEFAULT_REGION: "us" }, "DEFAULT_REGION", /not in REGIONS \(eu\)/],
      [{ REGIONS: "eu:weur", SOURCE_REGIONS: "maps/=us" }, "SOURCE_REGIONS", /"us", which is not in REGIONS/],
      [{ REGIONS: "eu:weur", SOURCE_REGIONS: "maps/" }, "SOURCE_REGIONS", /prefix=region/],
      [{ REGIONS: "eu:weur", SOURCE_REGIONS: "maps/=eu|" }, "SOURCE_REGIONS", /prefix=region/],
      [{ REGIONS: "eu:weur", SOURCE_REGIONS: "a=eu;a=eu" }, "SOURCE_REGIONS", /twice/],
      [{ SOURCE_REGIONS: "maps/=eu" }, "SOURCE_REGIONS", /not in REGIONS \(default\)/],
    ];
    for (const [vars, variable, message] of bad) {
      let error: unknown;
      try {
        placement(vars);
      } catch (err) {
        error = err;
      }
      expect(error, JSON.stringify(vars)).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable, JSON.stringify(vars)).toBe(variable);
      expect((error as ConfigError).message, JSON.stringify(vars)).toMatch(message);
    }
  });
});

describe("shards", () => {
  it("hash ids with 32-bit FNV-1a (its published test vectors)", () => {
    expect(fnv1a("")).toBe(0x811c9dc5);
    expect(fnv1a("a")).toBe(0xe40c292c);
    expect(fnv1a("foobar")).toBe(0xbf9cf968);
  });

  it("spread many ids evenly over the shards, each id always to the same one", () => {
    const p = placement(threeRegions);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[shardOf(p, `maps/sheet-${i}`)]++;
    for (const n of counts) expect(n).toBeGreaterThan(850); // 1000 each, give or take
    expect(shardOf(p, "maps/sheet-7")).toBe(shardOf(p, "maps/sheet-7"));
  });

  it("each own a fixed share that adds up to the region's total, never more", () => {
    for (const total of [0, 1, 3, 7, 8, 64, 1_000_000_007]) {
      for (const shards of [1, 2, 3, 4, 64]) {
        const shares = Array.from({ length: shards }, (_, i) => shardShare(total, i, shards));
        expect(shares.reduce((a, b) => a + b, 0), `${total} over ${shards}`).toBe(total);
        expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
      }
    }
    // Fewer permits than shards: the last shards get none (their sources are shed).
    expect([0, 1, 2, 3].map((i) => shardShare(2, i, 4))).toEqual([1, 1, 0, 0]);
  });

  it("know their index from their name", () => {
    expect(shardFromName("default")).toBe(0);
    expect(shardFromName("eu/3")).toBe(3);
    expect(shardFromName(undefined)).toBe(0);
  });
});

describe("a decoder's region", () => {
  it("travels in the heartbeat, optional, and must be one of the edge's REGIONS", () => {
    const beat = { url: "http://10.0.0.1:9100", capacity: 4, memoryBytes: 1e9 };
    expect(parseHeartbeat(JSON.stringify(beat))).toEqual(beat);
    expect(parseHeartbeat(JSON.stringify({ ...beat, region: "us" }))).toEqual({ ...beat, region: "us" });
    expect(() => parseHeartbeat(JSON.stringify({ ...beat, region: 7 }))).toThrow(/region/);
    const p = placement(threeRegions);
    expect(decoderRegion(p, "us")).toBe("us");
    expect(decoderRegion(p, undefined)).toBe("eu");
    expect(decoderRegion(p, "mars")).toBeUndefined();
    // An edge without REGIONS knows no region by name.
    expect(decoderRegion(placement({}), "default")).toBeUndefined();
  });

  it("is TESSERA_REGION on the decoder, checked at start", () => {
    expect(readHeartbeatConfig({ TESSERA_REGION: "us" }).region).toBe("us");
    expect(readHeartbeatConfig({}).region).toBeUndefined();
    expect(() => readHeartbeatConfig({ TESSERA_REGION: "US East" })).toThrow(/TESSERA_REGION must be a region name/);
  });
});
