#!/usr/bin/env node
// The `tessera` command (package.json "bin"). Plain JavaScript that any Node parses, so an
// older Node than the project's says so plainly instead of failing inside a dependency; then
// tsx's loader runs the TypeScript CLI. `npx tessera` puts node_modules/.bin first on the PATH,
// so `env node` above finds the Node the project pins there.
import { readFileSync } from "node:fs";

const engines = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).engines;
const required = Number(/\d+/.exec(engines.node)[0]);
if (Number(process.versions.node.split(".")[0]) < required) {
  process.stderr.write(
    `tessera needs Node ${required} or newer; this is Node ${process.versions.node} (${process.execPath}).\n` +
      "Run it as `npx tessera` inside the repository: npx runs it on the Node the project pins.\n",
  );
  process.exit(2); // the usage exit code: how it was started is wrong, not the input
}

const { register } = await import("tsx/esm/api");
register();
await import("../cli/main.ts");
