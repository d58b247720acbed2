// What the tessera command prints. Results go to stdout: text for people, or with --json one
// JSON document for programs. Errors and progress go to stderr, so stdout stays parseable
// whatever happens.

import { Presets, SingleBar } from "cli-progress";

/** What stopped a command: the input (exit 1), the command line or environment (exit 2), anything else (exit 1). */
export type StopKind = "refused" | "usage" | "failed";

/** The stream parts output needs; `isTTY` tells a terminal from a pipe or a log. */
export interface OutStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export class Output {
  /** Set from the global --json option once the command line is parsed. */
  json = false;
  private resultWritten = false;

  constructor(
    private readonly stdout: OutStream = process.stdout,
    private readonly stderr: OutStream = process.stderr,
  ) {}

  /** A command's result: `value` as JSON with --json, else the text `human` makes of it. */
  result(value: unknown, human: () => string): void {
    this.stdout.write(this.json ? `${JSON.stringify(value)}\n` : `${human()}\n`);
    this.resultWritten = true;
  }

  /**
   * Why the command stopped, on stderr. With --json, stdout also gets it as a JSON document,
   * unless a result already went there (a refused file's report says why by itself).
   */
  error(kind: StopKind, message: string): void {
    this.stderr.write(`tessera: ${message}\n`);
    if (this.json && !this.resultWritten) this.stdout.write(`${JSON.stringify({ error: kind, message })}\n`);
  }
}

export interface Progress {
  /** `done` bytes of the total are done. */
  update(done: number): void;
  /** The work ended (finished or not): a bar gives the terminal back. */
  stop(): void;
}

/**
 * A bar redrawn in place on a terminal; elsewhere (a pipe, CI logs) one plain line at each
 * tenth, so a log shows progress without thousands of redraws.
 */
export function progressReporter(label: string, total: number, stream: OutStream): Progress {
  if (stream.isTTY) return terminalBar(label, total, stream);
  let tenths = 0;
  return {
    update(done) {
      const reached = total > 0 ? Math.floor((Math.min(done, total) * 10) / total) : 10;
      if (reached <= tenths) return;
      tenths = reached;
      stream.write(`${label}: ${reached * 10}% (${Math.min(done, total)} of ${total} bytes)\n`);
    },
    stop() {},
  };
}

function terminalBar(label: string, total: number, stream: OutStream): Progress {
  const bar = new SingleBar(
    { format: `${label} [{bar}] {percentage}% {value}/{total} bytes`, stream: stream as NodeJS.WritableStream, hideCursor: true },
    Presets.shades_classic,
  );
  bar.start(total, 0);
  return { update: (done) => bar.update(done), stop: () => bar.stop() };
}
