// Runs the real tessera command in a child process, through its launcher, on the Node the
// project pins (vitest's own process.execPath).
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

export const REPO = fileURLToPath(new URL("../../", import.meta.url));
export const BIN = `${REPO}bin/tessera.js`;
export const SAMPLE = `${REPO}samples/test-pattern.tif`;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `tessera …args`; `nodeArgs` go to Node before the launcher. */
export function tessera(args: string[], nodeArgs: string[] = []): Promise<Run> {
  return run(process.execPath, [...nodeArgs, BIN, ...args]);
}

/** Runs `command` in the repository, whatever its exit code. */
export function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: REPO }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}
