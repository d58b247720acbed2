// A decoder started as its own process by a test (not through the stack): where it listens.
import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

/** The URL of the decoder's "listening" log line; rejects if the process exits before it. */
export function listeningUrl(decoder: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    decoder.once("exit", (code) => reject(new Error(`decoder exited with ${code}`)));
    createInterface({ input: decoder.stdout! }).on("line", (line) => {
      const listening = /"listening":"([^"]+)"/.exec(line)?.[1];
      if (listening) resolve(listening);
    });
  });
}
