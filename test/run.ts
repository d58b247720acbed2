// `npm test` after the type check: the suite as two streams at once. One is the e2e project
// (its files one at a time: they share one Ceph RGW, and one of them freezes it), then the
// deploy project's builds; the other is the unit, workers and workers-regions projects. Each
// alone leaves much of a two-core machine idle (decoders, workerd and the store answer in other
// processes), so together they take about as long as the longer one. A third stream would
// finish sooner on a quiet machine, but then the e2e tests that hold a decoder to its deadlines
// under load (faults, drain) get too little of the CPU they assume. Arguments go to both
// streams (a file filter, `-t`, `--bail`); a stream that no file of matches passes. Each
// stream's lines come through whole as they are written (vitest names each file's project),
// then a line a stream with its outcome and time; the exit code is 1 if either failed.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

const STREAMS = [["e2e", "deploy"], ["unit", "workers", "workers-regions", "workers-containers"]];

interface Outcome {
  projects: string[];
  code: number | null;
  seconds: number;
}

const children: ChildProcess[] = [];

function run(projects: string[], args: string[]): Promise<Outcome> {
  const started = performance.now();
  const child = spawn("vitest", ["run", "--passWithNoTests", ...projects.flatMap((p) => ["--project", p]), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    // Colour only where a person reads it; the pipes would otherwise turn it off.
    env: { ...process.env, ...(process.stdout.isTTY && { FORCE_COLOR: "1" }) },
  });
  children.push(child);
  createInterface({ input: child.stdout! }).on("line", (line) => process.stdout.write(`${line}\n`));
  createInterface({ input: child.stderr! }).on("line", (line) => process.stderr.write(`${line}\n`));
  return new Promise((resolve) =>
    child.on("close", (code) => resolve({ projects, code, seconds: (performance.now() - started) / 1000 })),
  );
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const child of children) child.kill(signal);
  });
}

const outcomes = await Promise.all(STREAMS.map((projects) => run(projects, process.argv.slice(2))));
for (const { projects, code, seconds } of outcomes) {
  console.log(`${projects.join(", ")}: ${code === 0 ? "passed" : `failed (exit ${code})`} in ${seconds.toFixed(0)} s`);
}
process.exit(outcomes.every((o) => o.code === 0) ? 0 : 1);
