// The toolchain a user gets from `npm install`, whatever Node the machine has: every script runs
// on the Node LTS the project pins as a dependency, and wrangler, Miniflare and the workerd test
// plugin share one Workers runtime, whose newest compatibility date wrangler.toml may use.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";

const ROOT = new URL("../../", import.meta.url);
const readJson = (file: URL | string) => JSON.parse(readFileSync(file, "utf8"));
const pkg = readJson(new URL("package.json", ROOT));
/** The version of `name` that a module in the package at `from` gets. */
const installed = (name: string, from = ROOT) => {
  expect(readJson(new URL("package.json", from)).name).toBeDefined(); // `from` is installed
  return readJson(createRequire(new URL("package.json", from)).resolve(`${name}/package.json`)).version as string;
};

describe("toolchain", () => {
  it("runs on the pinned Node LTS (a runtime dependency, so production installs get it too)", () => {
    expect(pkg.dependencies.node).toMatch(/^\d+\.\d+\.\d+$/);
    expect(process.version).toBe(`v${pkg.dependencies.node}`);
    expect(pkg.engines.node).toBe(`>=${process.versions.node.split(".")[0]}`);
  });

  it("has one Miniflare (one workerd) for wrangler dev, npm start and the workerd tests", () => {
    const miniflare = installed("miniflare");
    const wrangler = new URL("node_modules/wrangler/", ROOT);
    const plugin = new URL("node_modules/@cloudflare/vitest-plugin/", ROOT);
    expect(installed("miniflare", wrangler)).toBe(miniflare);
    expect(installed("miniflare", plugin)).toBe(miniflare);
    expect(installed("wrangler", plugin)).toBe(installed("wrangler"));
  });

  it("deploys with a compatibility date the runtime supports, so nothing falls back", () => {
    const toml = readFileSync(new URL("wrangler.toml", ROOT), "utf8");
    const date = /^compatibility_date = "(\d{4}-\d{2}-\d{2})"$/m.exec(toml)?.[1];
    // workerd's version names the newest date it supports: 1.YYYYMMDD.n
    const [, y, m, d] = /^1\.(\d{4})(\d{2})(\d{2})\.\d+$/.exec(installed("workerd", new URL("node_modules/miniflare/", ROOT)))!;
    expect(date).toBeDefined();
    expect(date! <= `${y}-${m}-${d}`).toBe(true);
  });
});
