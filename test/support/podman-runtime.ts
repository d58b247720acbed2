// The local Cloudflare Containers runtime (infra/containers/) as the deploy tests use it: whether
// podman can run containers here, and the variables runtime.sh prints once it has set it up.
import { execFileSync, spawnSync } from "node:child_process";
import type { TestContext } from "vitest";
import { ROOT } from "../../infra/root";

/** Why podman cannot run containers here, or undefined when it can. */
function podmanUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "needs root: rootless podman needs subordinate ids that infra/containers/runtime.sh does not set up";
  const info = spawnSync("podman", ["--runtime", "runc", "info"], { encoding: "utf8" });
  if (info.error) return `no podman (${info.error.message}): bash infra/local/install-deps.sh installs it`;
  if (info.status !== 0) return `podman cannot run here: ${info.stderr.trim().split("\n").pop()}`;
  return undefined;
}

/** Skips the test, saying why, where podman cannot run containers. */
export function skipWithoutPodman(ctx: TestContext): void {
  const unavailable = podmanUnavailable();
  // The default reporter does not print a skip's note.
  if (unavailable) process.stderr.write(`${ctx.task.name}: skipped: ${unavailable}\n`);
  ctx.skip(unavailable !== undefined, unavailable);
}

/** Sets the machine up (infra/containers/runtime.sh) and returns the variables wrangler then needs. */
export function containersRuntimeEnv(): Record<string, string> {
  const printed = execFileSync("bash", ["infra/containers/runtime.sh"], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  return Object.fromEntries([...printed.matchAll(/^export (\w+)=(.*)$/gm)].map(([, name, value]) => [name, value]));
}
