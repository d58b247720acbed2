// A catalog entry's update when other writers keep winning: against a stand-in store (not the
// project's code) that holds one entry and refuses every conditional PUT with 412, as S3 and R2
// do when the entry changed since it was read. The update gives up after its bounded attempts
// with an error that says why, having read the entry afresh before each.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { makeS3Client } from "../../infra/local/s3";
import { ENTRY_ATTEMPTS } from "../../cli/entry-update";
import { SourceStore } from "../../cli/source-store";

const calls = { get: 0, put: 0, conditions: new Set<string>() };
let server: Server;
let store: SourceStore;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.method === "PUT") {
      calls.put++;
      calls.conditions.add(String(req.headers["if-match"]));
      req.resume();
      return void res.writeHead(412, { "content-type": "application/xml" }).end("<Error><Code>PreconditionFailed</Code></Error>");
    }
    calls.get++;
    res.writeHead(200, { etag: `"${String(calls.get).padStart(32, "0")}"` }).end(JSON.stringify({ pins: [] }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  store = new SourceStore(makeS3Client({ endpoint, accessKeyId: "k", secretAccessKey: "s" }), "bucket", "", "content");
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

it("gives up after its attempts with an error naming the entry, each attempt on a fresh read and conditional on it", async () => {
  await expect(store.amend("busy", (entry) => ({ ...entry, policy: "AssumeImmutable" }))).rejects.toThrow(
    `the catalog entry s3://bucket/busy.tessera.json was changed by other writers ${ENTRY_ATTEMPTS} times while this command updated it: run the command again`,
  );
  expect([calls.get, calls.put]).toEqual([ENTRY_ATTEMPTS, ENTRY_ATTEMPTS]);
  // Each PUT named the ETag its own read found, unquoted (as Ceph RGW compares it) and quoted.
  expect(calls.conditions).toEqual(new Set(Array.from({ length: ENTRY_ATTEMPTS }, (_, i) => `${String(i + 1).padStart(32, "0")}, "${String(i + 1).padStart(32, "0")}"`)));
});
