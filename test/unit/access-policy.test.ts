// The operator's access policy for mosaic assets, as an attacker probes it: internal addresses in
// every spelling, host names that resolve inside, store keys that climb out or pose as URLs, and
// credentials in URLs. A refused asset must never reach the server (it counts every connection)
// nor the store opener; each refusal is a 502 naming the asset by a label that leaks nothing.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { ConfigError } from "../../shared/config";
import { HttpError } from "../../shared/errors";
import { readConfig } from "../../regional/config";
import { readAssetConfig } from "../../regional/source/access-policy";
import { AssetSources, assetLabel } from "../../regional/source/assets";
import { openLocalFile } from "../../regional/source/local";
import type { Source } from "../../regional/source/source";
import { startAssetServer, type AssetServer } from "../support/asset-server";

// Host names under .test resolve to what this table says, so a test can make a name resolve to
// a public address, an internal one, or both.
const fakeDns = new Map<string, Array<{ address: string; family: number }>>();
vi.mock("node:dns", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:dns")>();
  const lookup = (host: string, options: object, callback: (...args: unknown[]) => void) => {
    const answer = fakeDns.get(host);
    if (answer === undefined) return real.lookup(host, options as never, callback as never);
    process.nextTick(() => callback(null, answer));
  };
  return { ...real, default: { ...real, lookup }, lookup };
});

let dir: string;
let server: AssetServer;
let port: number;
let opened: string[];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-access-policy-"));
  await writeFile(path.join(dir, "a.tif"), "0123456789".repeat(100));
  server = await startAssetServer(dir);
  port = server.port;
});

afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  opened = [];
  fakeDns.clear();
});

/** The asset sources under `env`, store keys opened from the test folder and recorded. */
function sourcesFor(env: NodeJS.ProcessEnv): AssetSources {
  return new AssetSources(readAssetConfig(env), async (key) => {
    opened.push(key);
    const source = await openLocalFile(path.join(dir, key), key);
    if (!source) throw new HttpError("not_found", `no ${key}`);
    return source;
  });
}

async function refusalOf(sources: AssetSources, asset: string): Promise<HttpError> {
  let source: Source | undefined;
  try {
    source = await sources.open(asset);
  } catch (e) {
    expect(e, asset).toBeInstanceOf(HttpError);
    expect((e as HttpError).status, asset).toBe(502);
    // The client is told the policy refused an asset; which asset and why is for the log alone.
    expect((e as HttpError).message, asset).toBe("a mosaic asset is refused by the access policy");
    expect((e as HttpError).detail, asset).toContain(": a mosaic asset is refused by the access policy: ");
    return e as HttpError;
  }
  await source.close();
  throw new Error(`${asset} was opened`);
}

const internal = () => [
  `http://127.0.0.1:${port}/a.tif`,
  `http://[::1]:${port}/a.tif`,
  "http://169.254.169.254/latest/meta-data",
  `http://localhost:${port}/a.tif`,
  `http://0x7f000001:${port}/`,
  `http://2130706433:${port}/`,
  `http://[::ffff:127.0.0.1]:${port}/`,
  `HTTP://127.1:${port}/a.tif`,
  `http://0177.0.0.1:${port}/a.tif`,
];

describe("internal addresses", () => {
  it("are refused when their host is not allowed, and the server sees nothing", async () => {
    const sources = sourcesFor({});
    try {
      for (const url of internal()) expect((await refusalOf(sources, url)).detail, url).toMatch(/host \S+ is not allowed$/);
    } finally {
      await sources.close();
    }
    expect(server.connections).toBe(0);
    expect(server.requests).toHaveLength(0);
  });

  it("are refused with their host allowed but not their address, and the server sees nothing", async () => {
    const hosts = ["127.0.0.1", "[::1]", "localhost", "[::ffff:7f00:1]"].map((h) => `${h}:${port}`);
    const sources = sourcesFor({ TESSERA_ASSET_HOSTS: [...hosts, "169.254.169.254"].join(",") });
    try {
      for (const url of internal()) expect((await refusalOf(sources, url)).detail, url).toMatch(/is not a public address \((loopback|linkLocal)\)$/);
      const metadata = await refusalOf(sources, "http://169.254.169.254/latest/meta-data");
      expect(metadata.detail).toBe(
        "http://169.254.169.254/latest/meta-data: a mosaic asset is refused by the access policy: address 169.254.169.254 is not a public address (linkLocal)",
      );
      const byName = await refusalOf(sources, `http://localhost:${port}/a.tif`);
      expect(byName.detail).toMatch(/: host localhost resolves to (127\.0\.0\.1|::1), which is not a public address \(loopback\)$/);
    } finally {
      await sources.close();
    }
    expect(server.connections).toBe(0);
    expect(server.requests).toHaveLength(0);
  });

  it("are read once the operator allows their range", async () => {
    const sources = sourcesFor({ TESSERA_ASSET_HOSTS: `127.0.0.1:${port}`, TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8" });
    try {
      const source = await sources.open(`http://127.0.0.1:${port}/a.tif`);
      expect(Buffer.from(await source.read(5, 3)).toString()).toBe("567");
    } finally {
      await sources.close();
    }
    expect(server.requests.length).toBeGreaterThan(0);
  });

  it("refuses a host name if any of its addresses is internal, and connects to the address it checked", async () => {
    // A name with a public and an internal address: a connection could land on either.
    fakeDns.set("mixed.test", [{ address: "93.184.216.34", family: 4 }, { address: "10.0.0.7", family: 4 }]);
    // A name pointing at the test server, whose address the operator allows.
    fakeDns.set("mirror.test", [{ address: "127.0.0.1", family: 4 }]);
    const requestsBefore = server.requests.length;
    const sources = sourcesFor({ TESSERA_ASSET_HOSTS: `*.test:${port}`, TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.1/32" });
    try {
      const mixed = await refusalOf(sources, `http://mixed.test:${port}/a.tif`);
      expect(mixed.detail).toContain("host mixed.test resolves to 10.0.0.7, which is not a public address (private)");
      const source = await sources.open(`http://mirror.test:${port}/a.tif`);
      expect(Buffer.from(await source.read(0, 4)).toString()).toBe("0123");
      expect(server.requests.at(-1)?.headers.host).toBe(`mirror.test:${port}`);
    } finally {
      await sources.close();
    }
    expect(server.requests.length).toBe(requestsBefore + 1);
  });
});

describe("hosts", () => {
  const sources = () =>
    sourcesFor({ TESSERA_ASSET_HOSTS: "tiles.example.org,*.cdn.example.net,data.example.com:8443", TESSERA_ASSET_ALLOW_ADDRESSES: "0.0.0.0/0" });

  it("match exactly, by suffix, and on the scheme's default port unless a port is given", async () => {
    const s = sources();
    try {
      const refused = [
        "https://example.org/a.tif",
        "https://tiles.example.org.evil.net/a.tif",
        "https://eviltiles.example.org/a.tif",
        "https://tiles.example.org:8080/a.tif",
        "http://tiles.example.org:443/a.tif",
        "https://cdn.example.net/a.tif",
        "https://a.evilcdn.example.net/a.tif",
        "https://data.example.com/a.tif",
        "ftp://tiles.example.org/a.tif",
      ];
      for (const url of refused) await refusalOf(s, url);
      expect((await refusalOf(s, "https://example.org/a.tif")).detail).toBe(
        "https://example.org/a.tif: a mosaic asset is refused by the access policy: host example.org is not allowed",
      );
      expect((await refusalOf(s, "ftp://tiles.example.org/a.tif")).detail).toContain("only http:// and https:// URLs are read");
    } finally {
      await s.close();
    }
    expect(opened).toEqual([]);
  });
});

describe("addresses", () => {
  const policyOf = (allow?: string) => {
    const env: NodeJS.ProcessEnv = { TESSERA_ASSET_HOSTS: "*.test" };
    if (allow) env.TESSERA_ASSET_ALLOW_ADDRESSES = allow;
    return sourcesFor(env);
  };

  it("refuses every non-public range, in IPv4, IPv6 and IPv4-mapped forms", async () => {
    const refused = [
      "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
      "0.0.0.0", "224.0.0.1", "255.255.255.255", "240.0.0.1",
      "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
      "::127.0.0.1", "::7f00:1", "64:ff9b::a00:1", "2001:db8::1",
    ];
    const s = policyOf();
    try {
      for (const address of refused) {
        fakeDns.set("x.test", [{ address, family: address.includes(":") ? 6 : 4 }]);
        expect((await refusalOf(s, "http://x.test/a.tif")).detail, address).toContain(`resolves to ${address}, which is not a public address`);
      }
    } finally {
      await s.close();
    }
  });

  it("allows a private range the operator lists, IPv4-mapped forms included", async () => {
    // Port 9 (discard) at an allowed address: the check passes, and whatever the connection
    // meets, it is not the policy's refusal.
    const s = sourcesFor({ TESSERA_ASSET_HOSTS: "*.test:9", TESSERA_ASSET_ALLOW_ADDRESSES: "10.0.0.0/8,fd00::/8", TESSERA_ASSET_TIMEOUT_MS: "200" });
    try {
      for (const [i, address] of ["10.255.255.1", "::ffff:10.255.255.1", "fd00::1", "192.0.2.1"].entries()) {
        // A name of its own each: a connection already open to a host is reused without a lookup.
        fakeDns.set(`h${i}.test`, [{ address, family: address.includes(":") ? 6 : 4 }]);
        const err = await s.open(`http://h${i}.test:9/a.tif`).catch((e: HttpError) => e);
        const refusedByPolicy = err instanceof HttpError && err.message.includes("access policy");
        expect(refusedByPolicy, address).toBe(address === "192.0.2.1");
      }
    } finally {
      await s.close();
    }
  });
});

describe("store keys", () => {
  it("are refused when they climb out, pose as URLs or paths, or carry control characters, and never opened", async () => {
    const s = sourcesFor({ TESSERA_ASSET_HOSTS: `127.0.0.1:${port}`, TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8" });
    const before = server.requests.length;
    const hostile = [
      "../x.tif", "/etc/passwd", "a/../../b.tif", "a/./b.tif", "./a.tif", "a\\b.tif", "..\\a.tif", "a//b.tif", "a/",
      "", "s3://other-bucket/x.tif", "file:///etc/passwd", "gs://b/x.tif", "ftp://h/x.tif", "S3://b/x", "file:/etc/passwd",
      "C:/x.tif", "javascript:alert(1)", "a\u0000.tif", "a\nb.tif", "a\u0085.tif", `//127.0.0.1:${port}/a.tif`,
    ];
    try {
      for (const key of hostile) await refusalOf(s, key);
    } finally {
      await s.close();
    }
    expect(opened).toEqual([]);
    expect(server.requests).toHaveLength(before);
  });

  it("outside the allowed prefixes are refused; inside, opened by the store as written", async () => {
    const s = sourcesFor({ TESSERA_ASSET_PREFIXES: "mosaics/,shared/cogs/" });
    try {
      for (const key of ["a.tif", "other/a.tif", "mosaicsX/a.tif", "shared/a.tif", "Mosaics/a.tif"]) {
        expect((await refusalOf(s, key)).detail).toBe(
          `${key}: a mosaic asset is refused by the access policy: store key is outside the allowed prefixes (mosaics/, shared/cogs/)`,
        );
      }
      expect(opened).toEqual([]);
      await expect(s.open("mosaics/a?b#c.tif")).rejects.toThrow("no mosaics/a?b#c.tif");
      expect(opened).toEqual(["mosaics/a?b#c.tif"]);
    } finally {
      await s.close();
    }
  });

  it("are read from the store and never over HTTP, even when they look like a host", async () => {
    const s = sourcesFor({ TESSERA_ASSET_HOSTS: `127.0.0.1:${port}`, TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8" });
    const before = server.requests.length;
    try {
      const source = await s.open("a.tif");
      expect(source.label).toBe("a.tif");
      expect(Buffer.from(await source.read(0, 2)).toString()).toBe("01");
      await expect(s.open(`127.0.0.1:${port}/a.tif`)).rejects.toThrow(`no 127.0.0.1:${port}/a.tif`);
      await expect(s.open("www.example.org/a.tif")).rejects.toThrow("no www.example.org/a.tif");
    } finally {
      await s.close();
    }
    expect(opened).toEqual(["a.tif", `127.0.0.1:${port}/a.tif`, "www.example.org/a.tif"]);
    expect(server.requests).toHaveLength(before);
  });

  it("default to the catalog's own prefix: the whole data directory, or the S3 prefix", () => {
    expect(readAssetConfig({}).prefixes).toEqual([""]);
    expect(readAssetConfig({ TESSERA_SOURCE: "s3", TESSERA_S3_PREFIX: "cogs/" }).prefixes).toEqual(["cogs/"]);
    expect(readAssetConfig({ TESSERA_SOURCE: "s3", TESSERA_S3_PREFIX: "cogs/", TESSERA_ASSET_PREFIXES: " a/ , b/c/" }).prefixes).toEqual(["a/", "b/c/"]);
  });
});

describe("labels", () => {
  it("drop a URL's user name, password, query and fragment, and keep store keys verbatim", () => {
    expect(assetLabel("https://user:pw@h.org/a.tif?sig=abc#x")).toBe("https://h.org/a.tif");
    expect(assetLabel("HTTPS://H.org:8443/dir/a.tif?X-Amz-Signature=1")).toBe("https://h.org:8443/dir/a.tif");
    expect(assetLabel("http://[::1]:99/a.tif#pw")).toBe("http://[::1]:99/a.tif");
    expect(assetLabel("s3://key:secret@bucket/x.tif?v=1")).toBe("s3://bucket/x.tif");
    expect(assetLabel("https://user:pw@[bad/a.tif?sig=1")).toBe("https://<unparsable URL>");
    expect(assetLabel("a?b#c.tif")).toBe("a?b#c.tif");
    expect(assetLabel("dir/user:pw@x.tif")).toBe("dir/user:pw@x.tif");
  });

  it("are what refusals show, an unparsable URL included", async () => {
    const s = sourcesFor({});
    try {
      const err = await refusalOf(s, "https://user:pw@[bad/a.tif?sig=1#x");
      expect(err.detail).toBe("https://<unparsable URL>: a mosaic asset is refused by the access policy: the URL cannot be parsed");
    } finally {
      await s.close();
    }
  });
});

describe("configuration", () => {
  const bad: Record<string, string[]> = {
    TESSERA_ASSET_PREFIXES: ["a", "../a/", "/abs/", "a,,b/", "a/../b/", "s3://b/", "a\\b/", "a//"],
    TESSERA_ASSET_HOSTS: ["http://x.org", "x.org/path", "user@x.org", "*.127.0.0.1", "x.org:99999", "x.org:0", "0x7f000001", "*", "x.org,", "a b.org"],
    TESSERA_ASSET_ALLOW_ADDRESSES: ["10.0.0.0", "10/8", "0x0a.0.0.0/8", "010.0.0.0/8", "10.0.0.0/33", "banana", "fd00::/129", "10.0.0.0/8,"],
    TESSERA_ASSET_CONNECTIONS: ["0", "x", "2000", "1.5"],
    TESSERA_ASSET_TIMEOUT_MS: ["0", "-1", "1.5", "soon"],
  };

  for (const [variable, values] of Object.entries(bad)) {
    it(`refuses bad ${variable} values, naming the variable`, () => {
      for (const value of values) {
        let error: unknown;
        try {
          readAssetConfig({ [variable]: value });
        } catch (e) {
          error = e;
        }
        expect(error, `${variable}=${value}`).toBeInstanceOf(ConfigError);
        expect((error as ConfigError).message.startsWith(`${variable} `), `${variable}=${value}`).toBe(true);
      }
    });
  }

  it("reads good values, with defaults of no HTTP hosts, 16 connections and 10 s", () => {
    expect(readAssetConfig({})).toMatchObject({ hosts: [], allowAddresses: [], connections: 16, timeoutMs: 10_000 });
    const config = readAssetConfig({
      TESSERA_ASSET_HOSTS: "Tiles.Example.org, *.cdn.example.net:8443,[::1]:9000,10.0.0.5",
      TESSERA_ASSET_CONNECTIONS: "4",
      TESSERA_ASSET_TIMEOUT_MS: "2500",
    });
    expect(config.hosts).toEqual([
      { host: "tiles.example.org", wildcard: false, port: undefined },
      { host: "cdn.example.net", wildcard: true, port: 8443 },
      { host: "[::1]", wildcard: false, port: 9000 },
      { host: "10.0.0.5", wildcard: false, port: undefined },
    ]);
    expect(config).toMatchObject({ connections: 4, timeoutMs: 2500 });
  });

  it("is read with the decoder's configuration at start, a bad value stopping it", () => {
    const decoder = { TESSERA_DECODER_SECRET: "s", TESSERA_DATA_DIR: dir };
    expect(readConfig({ ...decoder, TESSERA_ASSET_HOSTS: "tiles.example.org" }).assets.hosts).toEqual([
      { host: "tiles.example.org", wildcard: false, port: undefined },
    ]);
    expect(() => readConfig({ ...decoder, TESSERA_ASSET_ALLOW_ADDRESSES: "10/8" })).toThrow(/^TESSERA_ASSET_ALLOW_ADDRESSES item "10\/8" is not/);
  });
});
