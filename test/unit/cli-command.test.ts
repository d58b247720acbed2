// The tessera command as a whole: help on every command, usage errors exit 2, and the
// launcher's answer on a Node older than the project's.
import { describe, expect, it } from "vitest";
import { run, tessera } from "./cli-helpers";

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
});
