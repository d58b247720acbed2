// glibc's allocator, which libvips and every thread of the decoder allocate through, keeps what a
// large render freed: its mmap threshold grows to the largest block freed (up to 32 MiB), after
// which large pixel buffers come from heaps it never returns, and each thread's arena keeps its
// own. Measured after one 5800² render, the process stayed 100–250 MiB above its idle figure for
// good; with these settings, and the render pool replaced once idle, within 20 MiB in 30 s.
// Buffers of tens of KiB (stored tiles, a codec's chunks) freed among ones that stay fragment a
// heap that then cannot shrink: after a spell of 32-asset map tiles the heaps kept 80–94 MiB with
// the threshold at 128 KiB, 30 at 64 KiB (22 at 32 KiB, at some 5 % of the native tile rate).
// V8's young generation grows to 64 MiB under map tiles' allocations and no collection gives
// it back: two decoders settled 120 MiB above their bound under bench:hostile; with its semi-spaces
// at 8 MiB, within it, and native tiles no slower (bench:decode).
// They must be given when the process starts (the image, the systemd unit and the local stack
// do); a decoder started without them says so.

/** The allocator settings every decoder process starts with. */
export const ALLOCATOR_ENV = {
  /** Two arenas, not eight per core: threads share, and freed memory is not spread thin. */
  MALLOC_ARENA_MAX: "2",
  /** Buffers from 64 KiB up are mapped and unmapped as a whole, the threshold fixed. */
  MALLOC_MMAP_THRESHOLD_: "65536",
  /** A heap's free top beyond 128 KiB goes back to the system at once. */
  MALLOC_TRIM_THRESHOLD_: "131072",
} as const;

/** The flags every decoder's Node starts with, before its script. */
export const DECODER_NODE_FLAGS = ["--max-semi-space-size=8"] as const;

/** The settings `env` lacks or sets otherwise, on Linux (where glibc is the allocator). */
export function missingAllocatorSettings(env: NodeJS.ProcessEnv, platform = process.platform): string[] {
  if (platform !== "linux") return [];
  return Object.entries(ALLOCATOR_ENV).flatMap(([name, value]) => (env[name] === value ? [] : [`${name}=${value}`]));
}

/** The flags neither Node's own arguments nor NODE_OPTIONS give. */
export function missingNodeFlags(execArgv: readonly string[], nodeOptions = ""): string[] {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)];
  return DECODER_NODE_FLAGS.filter((flag) => !given.includes(flag));
}
