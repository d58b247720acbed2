// What the deploy tests need to drive a server process such as `wrangler dev`: free ports to give
// it, and the moment it says it is ready.
import type { ChildProcess } from "node:child_process";
import { createServer } from "node:net";

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * `ready` resolves once `child` prints "Ready on" (wrangler dev's line), and rejects with all it
 * printed if it exits first; `output()` is what it has printed so far.
 */
export function whenReady(child: ChildProcess, name: string): { ready: Promise<void>; output: () => string } {
  let output = "";
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (/Ready on/.test(output)) resolve();
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`${name} exited with ${code}: ${output}`)));
  });
  return { ready, output: () => output };
}
