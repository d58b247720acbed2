// Every way a decoder is deployed starts it with the allocator settings and Node flags that return
// what large renders free (regional/runtime/allocator.ts): the image, the systemd unit, the local stack.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ALLOCATOR_ENV, DECODER_NODE_FLAGS, missingAllocatorSettings, missingNodeFlags } from "../../regional/runtime/allocator";
import { ROOT } from "../../infra/root";

const settings = Object.entries(ALLOCATOR_ENV).map(([name, value]) => `${name}=${value}`);

describe("the allocator settings", () => {
  it.each(["infra/image/Containerfile", "infra/systemd/tessera-decoder.service"])("are set by %s", (file) => {
    const text = readFileSync(`${ROOT}${file}`, "utf8");
    for (const setting of settings) expect(text, setting).toMatch(new RegExp(`(ENV|Environment=|\\s)${setting}(\\s|$)`));
    // Node's flags come before the script it runs.
    const start = /^(CMD \[.*"dist\/decoder\/main\.js"\]|ExecStart=.*main\.js)$/m.exec(text)![0];
    for (const flag of DECODER_NODE_FLAGS) expect(start.indexOf(flag), flag).toBeGreaterThan(0);
    expect(start.indexOf(DECODER_NODE_FLAGS[0])).toBeLessThan(start.indexOf("main.js"));
  });

  it("are named when a Linux decoder starts without them, and not elsewhere", () => {
    expect(missingAllocatorSettings({ MALLOC_ARENA_MAX: "2" }, "linux")).toEqual(settings.slice(1));
    expect(missingAllocatorSettings({ ...ALLOCATOR_ENV }, "linux")).toEqual([]);
    expect(missingAllocatorSettings({}, "darwin")).toEqual([]);
    expect(missingNodeFlags([], "")).toEqual([...DECODER_NODE_FLAGS]);
    expect(missingNodeFlags([...DECODER_NODE_FLAGS])).toEqual([]);
    expect(missingNodeFlags(["--import", "tsx"], `--enable-source-maps ${DECODER_NODE_FLAGS.join(" ")}`)).toEqual([]);
  });
});
