// A decoder's render-pool processes as the kernel sees them (/proc, Linux): found as its children
// running the render process's script, with their threads' nice values, their CPU time and
// their resident memory, which counts in the decoder's. For the tests and the benches.
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks a second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** Reads a /proc file of a process that may have exited meanwhile ("" then). */
function proc(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** The fields of a /proc stat line after its pid and (comm): field 3 of proc(5) first. */
const statFields = (stat: string) => stat.slice(stat.lastIndexOf(")") + 2).split(" ");

/** The render processes the decoder `pid` started (any of its threads may be their parent). */
export function renderProcesses(pid: number | "self" = "self"): number[] {
  return tasksOf(pid)
    .flatMap((tid) => proc(`/proc/${pid}/task/${tid}/children`).split(" ").filter(Boolean).map(Number))
    .filter((child) => proc(`/proc/${child}/cmdline`).includes("render-process"));
}

/** The thread ids of process `pid` (none once it has exited). */
function tasksOf(pid: number | "self"): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
}

/** Whether process `pid` has ended (a zombie has: only its parent's wait is left, and its parent is gone). */
export function ended(pid: number): boolean {
  const state = statFields(proc(`/proc/${pid}/stat`))[0];
  return state === "" || state === "Z";
}

/** The nice value of every thread of process `pid`. */
export function threadNices(pid: number): number[] {
  return tasksOf(pid).map((tid) => Number(statFields(proc(`/proc/${pid}/task/${tid}/stat`))[16]));
}

/** CPU time (user and system) process `pid` has used, in microseconds. */
export function cpuMicros(pid: number): number {
  const f = statFields(proc(`/proc/${pid}/stat`));
  return ((Number(f[11]) + Number(f[12])) * 1e6) / TICKS_PER_SECOND;
}

/** A memory figure of process `pid`'s status (VmRSS now, VmHWM its peak), in bytes (0 once it has exited). */
function statusBytes(pid: number, field: "VmRSS" | "VmHWM"): number {
  return 1024 * Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(proc(`/proc/${pid}/status`))?.[1] ?? 0);
}

export const residentBytes = (pid: number) => statusBytes(pid, "VmRSS");

/** The resident memory of decoder `pid` and of its render processes, which count in its envelope. */
export function decoderResidentBytes(pid: number): number {
  return [pid, ...renderProcesses(pid)].reduce((sum, p) => sum + residentBytes(p), 0);
}

/** The peaks of decoder `pid` and of its live render processes, summed: at least the peak of them all. */
export function decoderPeakBytes(pid: number): number {
  return [pid, ...renderProcesses(pid)].reduce((sum, p) => sum + statusBytes(p, "VmHWM"), 0);
}
