// The tessera command as a whole: help on every command, usage errors exit 2, the launcher's
// answer on a Node older than the project's, the id rule in every command, and `invalidate
// --member` naming the member.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { run, SAMPLE, tessera } from "./cli-helpers";

// Each test starts a process; on a busy machine that takes a few seconds.
describe("tessera", { timeout: 20_000 }, () => {
  it("prints its help, with the commands, the environment and the exit codes", async () => {
    const run = await tessera(["--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: tessera \[options\] \[command\]/);
    expect(run.stdout).toContain("validate <file>");
    expect(run.stdout).toContain("TESSERA_S3_BUCKET");
    expect(run.stdout).toContain("Exit status: 0 done, 1 refused");
  });

  it("prints each command's help", async () => {
    for (const args of [["validate", "--help"], ["help", "validate"]]) {
      const run = await tessera(args);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^Usage: tessera validate \[options\] <file>/);
    }
  });

  it("exits 2 on an unknown command, a missing argument or an unknown option", async () => {
    const runs = await Promise.all([["publsh"], ["validate"], ["validate", "--frob", "x.tif"]].map((args) => tessera(args)));
    expect(runs.map((r) => r.code)).toEqual([2, 2, 2]);
    expect(runs[0].stderr).toContain("unknown command 'publsh'");
    expect(runs[1].stderr).toContain("missing required argument 'file'");
    expect(runs[2].stderr).toContain("unknown option '--frob'");
  });

  it("takes a version that begins with a dash (as S3 version ids may) as the version, not an option", async () => {
    // No store is configured: a version taken as such gets as far as asking for one.
    const run = await tessera(["pin", "city", "-GZKI1Bb5P0MNFCbZhE4gnk7sPkhzLg"]);
    expect(run.stderr).not.toContain("unknown option");
    expect(run.stderr).toContain("TESSERA_S3_BUCKET");
    expect(run.code).toBe(2);
  });

  it("refuses an id the decoder would never serve (a path, a hidden name) in every command, before any store or edge is asked: exit 2", async () => {
    const runs = await Promise.all(
      [
        ["publish", SAMPLE, "--id", "../../x"], // would have written …/sources/../../x.tif
        ["publish", SAMPLE, "--id", "shared/cogs/member"], // a key a mosaic may use
        ["pin", "../x", "v1"],
        ["rollback", "a/b"],
        ["versions", ".hidden"],
        ["invalidate", "x y"],
        ["gc", "../x", "--delete"],
      ].map((args) => tessera(args)),
    );
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain("source ids are letters, digits, '.', '_' and '-', not starting with '.'");
      expect(run.stderr).not.toContain("TESSERA_S3_BUCKET"); // refused before the store's settings are read
    }
  });

  it("says which Node it needs when an older one runs the launcher, and exits 2", async () => {
    // Node 20 itself is never run: the pinned Node pretends to be it.
    const pretend = 'Object.defineProperty(process,"versions",{value:{...process.versions,node:"20.19.0"}})';
    const run = await tessera(["--help"], ["--import", `data:text/javascript,${encodeURIComponent(pretend)}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("tessera needs Node 24 or newer; this is Node 20.19.0");
    expect(run.stdout).toBe("");
  });

  it("runs as `npx tessera`, the package's bin", async () => {
    const { code, stdout } = await run("npx", ["--no-install", "tessera", "--help"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: tessera/);
  });

  it("invalidates one member of a mosaic with --member, the asset percent-encoded in the query", async () => {
    const asked: { url?: string; method?: string; authorization?: string }[] = [];
    const edge = createServer((req, res) => {
      asked.push({ url: req.url, method: req.method, authorization: req.headers.authorization });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ id: "city", member: "tiles/2026/a b.tif", decoders: 2, invalidated: 2, dropped: 3 }));
    });
    await new Promise<void>((resolve) => edge.listen(0, "127.0.0.1", resolve));
    process.env.TESSERA_EDGE_URL = `http://127.0.0.1:${(edge.address() as AddressInfo).port}`;
    process.env.TESSERA_ADMIN_TOKEN = "cli-admin-token";
    try {
      const run = await tessera(["invalidate", "city", "--member", "tiles/2026/a b.tif"]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(asked).toEqual([
        { url: "/admin/sources/city/invalidate?member=tiles%2F2026%2Fa%20b.tif", method: "POST", authorization: "Bearer cli-admin-token" },
      ]);
      expect(run.stdout).toContain("city: 2 of 2 decoders dropped 3 snapshots of member tiles/2026/a b.tif");
    } finally {
      delete process.env.TESSERA_EDGE_URL;
      delete process.env.TESSERA_ADMIN_TOKEN;
      edge.close();
    }
  });

  it("names the store's broken object in full: the publisher's own bucket, which a decoder's answer leaves out", async () => {
    const store = createServer((req, res) => {
      if (req.url?.includes("city.tessera.json")) return void res.end("{");
      // tessera asks first whether the bucket keeps versions.
      if (req.url?.includes("versioning")) return void res.end("<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>");
      res.writeHead(404).end("<Error><Code>NoSuchKey</Code></Error>");
    });
    await new Promise<void>((resolve) => store.listen(0, "127.0.0.1", resolve));
    const env = {
      TESSERA_S3_ENDPOINT: `http://127.0.0.1:${(store.address() as AddressInfo).port}`,
      TESSERA_S3_BUCKET: "publisher-bucket",
      AWS_ACCESS_KEY_ID: "id",
      AWS_SECRET_ACCESS_KEY: "secret",
    };
    Object.assign(process.env, env);
    try {
      const run = await tessera(["versions", "city"]);
      expect(run.stderr).toContain("catalog entry s3://publisher-bucket/city.tessera.json is not JSON");
      expect(run.code).toBe(1);
    } finally {
      for (const name of Object.keys(env)) delete process.env[name];
      store.close();
    }
  });
});
