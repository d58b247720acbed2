// The workerd process of a stack (Miniflare starts one), found by the port it listens on, and
// its resident memory as the kernel counts it: for the benches and the tests that measure them.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The workerd process listening at `url` (Miniflare may pick the port after workerd starts). */
export function workerdPid(url: string): number {
  const port = Number(new URL(url).port).toString(16).toUpperCase().padStart(4, "0");
  const listening = new Set(
    readFileSync("/proc/net/tcp", "utf8")
      .split("\n")
      .map((line) => line.trim().split(/\s+/))
      .filter((f) => f[1]?.endsWith(`:${port}`) && f[3] === "0A") // 0A: LISTEN
      .map((f) => `socket:[${f[9]}]`),
  );
  for (const pid of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("workerd\0serve")) continue;
      if (readdirSync(`/proc/${pid}/fd`).some((fd) => listening.has(readlinkSync(`/proc/${pid}/fd/${fd}`)))) return Number(pid);
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  throw new Error(`no workerd listens at ${url}`);
}

/** A process's resident memory now, in bytes (VmRSS in /proc/<pid>/status). */
export function residentBytes(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) * 1024;
}
