// The decoder service across a source change, client disconnects and unexpected failures.

import { copyFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DECODER, VERSION_HEADER, type SourceInfo } from "../../shared/protocol";
import { LocalCatalog } from "../../regional/source/local";
import type { Source, SourceCatalog } from "../../regional/source/source";
import { fixtureDir, SAMPLES, signedGet, startDecoder, type Decoder } from "./regional-helpers";

let fixtures: Awaited<ReturnType<typeof fixtureDir>>;

beforeAll(async () => {
  fixtures = await fixtureDir();
});
afterAll(async () => {
  await fixtures?.remove();
});

const infoOf = async (d: Decoder, id: string) => (await (await signedGet(d, DECODER.info(id))).json()) as SourceInfo;

describe("a source rewritten while the decoder runs", () => {
  it("never answers the old version with new bytes; the new version is served", async () => {
    const d = await startDecoder(new LocalCatalog(fixtures.dir));
    try {
      const old = await infoOf(d, "jpeg");
      const oldPath = DECODER.image("jpeg", "0,0,300,300/max/0/default.jpg", old.version);
      expect((await signedGet(d, oldPath)).status).toBe(200); // headers now cached for `old`

      // Rewrite in place with different bytes (the lossless sample).
      await copyFile(path.join(SAMPLES, "test-pattern-deflate.tif"), path.join(fixtures.dir, "jpeg.tif"));

      // Blocks already decoded for `old` are still `old`'s pixels (the cache key carries the
      // version); a window needing blocks not yet read must fail rather than read new bytes.
      const stale = await signedGet(d, DECODER.image("jpeg", "600,600,300,300/max/0/default.jpg", old.version));
      expect([404, 502]).toContain(stale.status);
      expect(stale.headers.get("content-type")).toContain("application/json");
      // Once the snapshot is dropped, the old version is simply gone.
      expect((await signedGet(d, oldPath)).status).toBe(404);

      const now = await infoOf(d, "jpeg");
      expect(now.version).not.toBe(old.version);
      const res = await signedGet(d, DECODER.image("jpeg", "0,0,300,300/max/0/default.jpg", now.version));
      expect(res.status).toBe(200);
      expect(res.headers.get(VERSION_HEADER)).toBe(now.version);
    } finally {
      await d.close();
    }
  });
});

/** Wraps a catalog so reads with a signal (tile reads) hang until aborted. */
class HangingCatalog implements SourceCatalog {
  readonly description = "hanging";
  aborted: unknown[] = [];
  readStarted!: Promise<void>;
  private started!: () => void;
  constructor(private readonly inner: SourceCatalog) {
    this.reset();
  }
  openKey(key: string, signal?: AbortSignal): Promise<Source> {
    return this.inner.openKey(key, signal);
  }
  reset() {
    this.readStarted = new Promise((r) => (this.started = r));
  }
  async open(id: string, version: string | undefined, signal?: AbortSignal): Promise<Source> {
    const src = await this.inner.open(id, version, signal);
    const read = src.read.bind(src);
    src.read = (offset, length, sig) => {
      if (!sig) return read(offset, length, sig);
      this.started();
      return new Promise((_, reject) => {
        sig.addEventListener("abort", () => {
          this.aborted.push(sig.reason);
          reject(sig.reason);
        });
      });
    };
    return src;
  }
}

describe("client disconnect", () => {
  it("aborts the signal that reaches Source.read, and the server keeps serving", async () => {
    const catalog = new HangingCatalog(new LocalCatalog(fixtures.dir));
    const d = await startDecoder(catalog);
    try {
      const info = await infoOf(d, "deflate");
      const client = new AbortController();
      const pending = fetch(d.url + DECODER.image("deflate", "full/max/0/default.jpg", info.version), {
        signal: client.signal,
        headers: await (await import("../../shared/protocol")).signedHeaders(d.secret, "GET", DECODER.image("deflate", "full/max/0/default.jpg", info.version)),
      });
      await catalog.readStarted;
      client.abort();
      await expect(pending).rejects.toThrow();
      await expect.poll(() => catalog.aborted.length, { timeout: 2000 }).toBeGreaterThan(0);
      expect(String(catalog.aborted[0])).toContain("client disconnected");
      await expect.poll(() => d.logs.some((r) => r.msg === "request" && r.status === "aborted")).toBe(true);
      expect((await fetch(d.url + DECODER.health)).status).toBe(200);
    } finally {
      await d.close();
    }
  });
});

describe("unexpected failures", () => {
  it("answer 502 with a generic message, log the detail, and do not crash", async () => {
    const broken: SourceCatalog = {
      description: "broken",
      open: async () => {
        throw new TypeError("secret internal detail at /some/path");
      },
      openKey: async () => {
        throw new TypeError("secret internal detail at /some/path");
      },
    };
    const d = await startDecoder(broken);
    try {
      const res = await signedGet(d, DECODER.info("anything"));
      expect(res.status).toBe(502);
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ error: "bad_gateway", message: "internal failure", requestId: expect.any(String) });
      expect(text).not.toContain("secret");
      const logged = d.logs.find((r) => r.level === "error");
      expect(logged).toMatchObject({ msg: "unexpected failure", error: "secret internal detail at /some/path" });
      expect((await fetch(d.url + DECODER.health)).status).toBe(200);
    } finally {
      await d.close();
    }
  });

  it("answer 501 for a IIIF image of a TIFF with non-8-bit samples, naming the reason (its info is served)", async () => {
    const { execFileSync } = await import("node:child_process");
    execFileSync("gdal_translate", [
      "-q", "-of", "COG", "-ot", "UInt16", "-co", "BLOCKSIZE=256",
      path.join(SAMPLES, "test-pattern.png"), path.join(fixtures.dir, "sixteen.tif"),
    ]);
    const d = await startDecoder(new LocalCatalog(fixtures.dir));
    try {
      const info = await signedGet(d, DECODER.info("sixteen"));
      expect(info.status).toBe(200);
      const { version } = (await info.json()) as { version: string };
      const res = await signedGet(d, DECODER.image("sixteen", "full/max/0/default.jpg", version));
      expect(res.status).toBe(501);
      expect(((await res.json()) as { message: string }).message).toContain("16-bit");
    } finally {
      await d.close();
    }
  });
});
