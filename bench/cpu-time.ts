// The CPU time of a piece of work, as the work benches count it: every thread of this process
// (libvips's and the worker threads' included), the median of several runs after one warm-up, so
// a coefficient is what the work costs a core, whatever else the machine is doing.

/** CPU milliseconds `run` takes: the median of `rounds` runs after one untimed run. */
export async function cpuMs(run: () => Promise<unknown> | unknown, rounds: number): Promise<number> {
  await run();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const before = process.cpuUsage();
    await run();
    const used = process.cpuUsage(before);
    times.push((used.user + used.system) / 1000);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}
