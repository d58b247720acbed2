// Following one request through the real stack: the id a client sends (or the edge gives) is on
// the answer, in the decoder's log line for the decode it caused and in the error body, which
// says what is wrong while the decoder's error line of the same id says where; hostile ids, sent
// as raw bytes the way an attacker sends them, are never echoed in an answer or a log.
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";
import { buildTiff } from "../support/tiff-builder";

const SAMPLES = new URL("../../samples/", import.meta.url).pathname;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const ADMIN_TOKEN = "request-id-admin-token";

let stack: Stack;
let dir: string;
const logged: Record<string, unknown>[] = [];
const rawLog: string[] = [];
/** The decoder's error records (stderr). */
const errorLog: Record<string, unknown>[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-request-id-"));
  await copyFile(`${SAMPLES}test-pattern.tif`, `${dir}/pattern.tif`);
  stack = await startStack({ decoders: 1, decoderEnv: { TESSERA_DATA_DIR: dir }, vars: { ADMIN_TOKEN } });
  stack.decoders[0].lines.on("line", (line) => {
    rawLog.push(line);
    logged.push(JSON.parse(line));
  });
  // Node may write lines of its own (a warning) among the records.
  stack.decoders[0].errors.on("line", (line) => {
    if (line.startsWith("{")) errorLog.push(JSON.parse(line));
  });
});
afterAll(async () => {
  await stack?.stop();
  await rm(dir, { recursive: true, force: true });
});

const decoderLines = (requestId: string) => logged.filter((l) => l.requestId === requestId);

/** Sends one GET as raw bytes, header value and all; resolves to the answer's head. */
function rawGet(pathAndQuery: string, headerValue: Buffer): Promise<string> {
  const { hostname, port } = new URL(stack.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("end", () => resolve(text.split("\r\n\r\n")[0]));
    socket.on("error", reject);
    socket.write(
      Buffer.concat([
        Buffer.from(`GET ${pathAndQuery} HTTP/1.1\r\nhost: ${hostname}:${port}\r\nconnection: close\r\nx-request-id: `),
        headerValue,
        Buffer.from("\r\n\r\n"),
      ]),
    );
  });
}

describe("one request id through every tier", () => {
  it("is on the answer and in the decoder's log line for the decode; a cache hit gets its own", async () => {
    const tile = "/iiif/3/pattern/100,100,200,200/100,/0/default.jpg";
    const miss = await fetch(stack.url + tile, { headers: { "x-request-id": "slow-tile-0001" } });
    expect([miss.status, miss.headers.get("x-request-id"), miss.headers.get("x-tessera-cache")]).toEqual([200, "slow-tile-0001", "miss"]);
    await miss.arrayBuffer();
    // The source's metadata, then the decode: both carry the client's id.
    await expect.poll(() => decoderLines("slow-tile-0001").map((l) => String(l.path).split("/").slice(0, 4).join("/"))).toEqual([
      "/v1/info/pattern",
      "/v1/image/pattern",
    ]);
    expect(decoderLines("slow-tile-0001")[1]).toMatchObject({ msg: "request", status: 200, ms: expect.any(Number) });

    const hit = await fetch(stack.url + tile, { headers: { "x-request-id": "slow-tile-0002" } });
    expect([hit.status, hit.headers.get("x-request-id"), hit.headers.get("x-tessera-cache")]).toEqual([200, "slow-tile-0002", "hit"]);
    await hit.arrayBuffer();
    expect(decoderLines("slow-tile-0002")).toEqual([]); // a hit never reaches a decoder
  });

  it("is in the error body and in the decoder's log line of the same failed request", async () => {
    const res = await fetch(`${stack.url}/iiif/3/no-such-image/info.json`, { headers: { "x-request-id": "missing-image-42" } });
    expect(res.status).toBe(404);
    expect(res.headers.get("x-request-id")).toBe("missing-image-42");
    expect(await res.json()).toMatchObject({ error: "not_found", requestId: "missing-image-42" });
    await expect.poll(() => decoderLines("missing-image-42")).toEqual([expect.objectContaining({ msg: "request", path: "/v1/info/no-such-image", status: 404 })]);
  });

  it("is in a 501's body, which the edge lets anyone cache and which names neither file nor library, and in the decoder's error line that does", async () => {
    const tiles = [new Uint8Array(16 * 16 * 3)];
    await writeFile(`${dir}/weird-compression.tif`, buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression: 99, tiles }));
    const res = await fetch(`${stack.url}/iiif/3/weird-compression/info.json`, { headers: { "x-request-id": "weird-compression-1" } });
    expect([res.status, res.headers.get("cache-control")]).toEqual([501, expect.stringMatching(/^public/)]);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({
      error: "unsupported",
      message: "this source uses a TIFF compression the decoder does not read (code 99)",
      requestId: "weird-compression-1",
    });
    for (const internal of ["local:", dir, "Unknown compression"]) expect(text).not.toContain(internal);
    await expect.poll(() => errorLog.filter((l) => l.requestId === "weird-compression-1")).toEqual([
      expect.objectContaining({ level: "error", msg: "refused", status: 501, detail: "local:weird-compression: no codec for Compression 99" }),
    ]);
  });

  it("replaces hostile ids sent as raw bytes, and never echoes them in an answer or a log line", async () => {
    const hostile = [
      Buffer.from("a".repeat(65)),
      Buffer.from("x".repeat(5000)),
      Buffer.from('"quoted-id-123"'),
      Buffer.from("id with spaces 123"),
      Buffer.from("caf\u00e9-au-lait-1", "utf8"), // raw UTF-8
      Buffer.from("trace\u202eevil-123", "utf8"), // right-to-left override
      Buffer.from([0x61, 0x62, 0x63, 0x64, 0xff, 0xfe, 0x65, 0x66, 0x67, 0x68]), // not UTF-8 at all
      Buffer.from("abcdefgh<script>alert(1)</script>"),
      Buffer.from("abcdefgh;rm -rf"),
    ];
    for (const [i, value] of hostile.entries()) {
      // A distinct miss each, so each reaches the decoder.
      const head = await rawGet(`/iiif/3/pattern/${i * 50},0,50,50/50,/0/default.jpg`, value);
      const given = /^x-request-id: (.*)$/im.exec(head)?.[1];
      expect(head, value.toString("latin1")).toMatch(/^HTTP\/1\.1 200 /);
      expect(given, value.toString("latin1")).toMatch(UUID);
      await expect.poll(() => decoderLines(given!).length).toBe(1);
    }
    const everything = rawLog.join("\n");
    for (const value of hostile.slice(0, 4)) expect(everything).not.toContain(value.toString("latin1"));
    expect(everything).not.toContain("<script>");
  });

  // Last: it makes the edge forget the source's metadata.
  it("reaches the decoder's log line of a publisher's invalidation", async () => {
    const res = await fetch(`${stack.url}/admin/sources/pattern/invalidate`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "x-request-id": "publish-run-0007" },
    });
    expect([res.status, res.headers.get("x-request-id")]).toEqual([200, "publish-run-0007"]);
    expect(await res.json()).toMatchObject({ id: "pattern", decoders: 1, invalidated: 1 });
    await expect.poll(() => decoderLines("publish-run-0007")).toEqual([expect.objectContaining({ msg: "request", path: "/v1/invalidate/pattern", status: 200 })]);
  });
});
