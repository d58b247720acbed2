// Regional decoder processes, as the local stack, the tests and the benches start and stop them:
// one `node` each, which prints where it listens and exits with its parent. Apart from stack.ts so
// that what only starts decoders (the Worker tests' set-ups) loads neither Miniflare nor wrangler.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface, type Interface } from "node:readline";
import { ALLOCATOR_ENV, DECODER_NODE_FLAGS } from "../../regional/runtime/allocator.ts";
import { ROOT } from "../root.ts";

export interface DecoderProcess {
  url: string;
  process: ChildProcess;
  /** Its log, one JSON line at a time (stdout), for a test to listen to. */
  lines: Interface;
  /** Its error records (stderr: failures, refusals with their detail), the same way. */
  errors: Interface;
}

/**
 * How a decoder process starts: from the source under tsx (an edit takes effect at the next
 * start), or, with TESSERA_DECODER_BUILD naming a `npm run build:decoder` directory, from that
 * build, a second sooner and as deployed (the tests, which start dozens).
 */
function decoderArgs(): string[] {
  const build = process.env.TESSERA_DECODER_BUILD;
  return [...DECODER_NODE_FLAGS, ...(build ? [`${build.replace(/\/$/, "")}/main.js`] : ["--import", "tsx", "regional/main.ts"])];
}

/** Starts one decoder process and resolves once it prints where it listens. */
export function startDecoder(env: Record<string, string>, verbose = false): Promise<DecoderProcess> {
  const child = spawn(process.execPath, decoderArgs(), {
    cwd: ROOT,
    env: { ...process.env, ...ALLOCATOR_ENV, TESSERA_DECODER_EXIT_WITH_PARENT: "1", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const errors = createInterface({ input: child.stderr! });
  if (verbose) errors.on("line", (line) => process.stderr.write(line + "\n"));
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    child.once("exit", (code) => reject(new Error(`decoder exited with ${code} before listening`)));
    lines.on("line", (line) => {
      const listening = /"listening":"([^"]+)"/.exec(line)?.[1];
      if (listening) resolve({ url: listening, process: child, lines, errors });
      else if (verbose) process.stderr.write(line + "\n");
    });
  });
}

/**
 * Stops a decoder as an operator's SIGTERM does: it drains (finishes what it holds, up to its
 * TESSERA_DRAIN_TIMEOUT_MS) and exits. Resolves with its exit code.
 */
export function stopDecoder(d: DecoderProcess): Promise<number | null> {
  return ended(d, "SIGTERM", DRAIN_WAIT_MS);
}

/** Kills a decoder at once (SIGKILL), as a crash or an OOM kill does: nothing is drained. */
export function killDecoder(d: DecoderProcess): Promise<number | null> {
  return ended(d, "SIGKILL", 0);
}

/** Past the default drain deadline and its linger, a decoder that has not exited is killed. */
const DRAIN_WAIT_MS = 35_000;

async function ended(d: DecoderProcess, signal: NodeJS.Signals, killAfterMs: number): Promise<number | null> {
  if (d.process.exitCode !== null || d.process.signalCode !== null) return d.process.exitCode;
  const exited = new Promise<number | null>((r) => d.process.once("exit", (code) => r(code)));
  d.process.kill("SIGCONT"); // a test may have frozen it
  d.process.kill(signal);
  const timer = killAfterMs > 0 ? setTimeout(() => d.process.kill("SIGKILL"), killAfterMs) : undefined;
  const code = await exited;
  clearTimeout(timer);
  return code;
}
