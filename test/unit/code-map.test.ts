// docs/development.md's map of the code is one row a folder: a folder added without a row, or a
// row left for a folder that is gone, fails here, so the map a newcomer reads stays the tree.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** Every folder that holds a file git tracks or would (not an ignored one), as "a/b/". */
function trackedFolders(): Set<string> {
  const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" }).trim().split("\n");
  return new Set(files.map((f) => path.posix.dirname(f)).filter((d) => d !== ".").map((d) => `${d}/`));
}

/** The folders the Layout table's first column names, in backticks. */
function mappedFolders(): Set<string> {
  const doc = readFileSync(path.join(ROOT, "docs/development.md"), "utf8");
  const layout = doc.slice(doc.indexOf("## Layout"));
  const rows = layout.split("\n").filter((l) => l.startsWith("| `"));
  return new Set(rows.flatMap((row) => [...row.split("|")[1].matchAll(/`([^`]+\/)`/g)].map((m) => m[1])));
}

describe("the map of the code in docs/development.md", () => {
  it("has a row for every folder of the tree, and no row for a folder that is not there", () => {
    const tracked = trackedFolders();
    const mapped = mappedFolders();
    expect([...tracked].filter((d) => !mapped.has(d)), "folders without a row").toEqual([]);
    expect([...mapped].filter((d) => !tracked.has(d)), "rows without a folder").toEqual([]);
  });
});
