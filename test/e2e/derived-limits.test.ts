// The output limit a decoder derives from its work budget, through the whole stack: the edge
// declares it in info.json (3.0 at the top level, 2.1 inside the profile), tightens the
// operator's MAX_AREA with it, resolves max within it, and refuses explicit sizes beyond it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";
import { patternCog } from "../support/pattern-cog";

let stack: Stack;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-derived-"));
  patternCog(path.join(dir, "big.tif"), 6000);
  stack = await startStack({
    // 128 MiB cannot render the 6000² RGB image whole (~3,050² at most, by the cost model).
    decoderEnv: { TESSERA_DATA_DIR: dir, TESSERA_WORK_BUDGET_MB: "128" },
    // The operator's limit is looser than what the decoder can render: the derived one wins.
    vars: { MAX_AREA: String(5000 * 5000) },
  });
});
afterAll(async () => {
  await stack?.stop();
  await rm(dir, { recursive: true, force: true });
});

const get = (p: string) => fetch(stack.url + p);

describe.each([3, 2] as const)("a 6000² COG on a decoder with a 128 MiB work budget, Image API %i.x", (v) => {
  const base = `/iiif/${v}/big`;
  const maxSize = v === 3 ? "max" : "full";

  async function declaredArea(): Promise<number> {
    const info = (await (await get(`${base}/info.json`)).json()) as Record<string, unknown>;
    const limits = v === 3 ? info : ((info.profile as unknown[])[1] as Record<string, unknown>);
    expect(limits.maxArea).toEqual(expect.any(Number));
    return limits.maxArea as number;
  }

  it("info.json declares the derived maxArea, below the operator's", async () => {
    const area = await declaredArea();
    expect(area).toBeGreaterThan(3000 * 3000);
    expect(area).toBeLessThan(5000 * 5000);
  });

  it(`${maxSize} answers at the declared size; an explicit size beyond it is 400`, async () => {
    const area = await declaredArea();
    const res = await get(`${base}/full/${maxSize}/0/default.jpg`);
    expect(res.status, await res.clone().text()).toBe(200);
    const { width, height } = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect(width! * height!).toBeLessThanOrEqual(area);
    expect((width! + 1) * (height! + 1)).toBeGreaterThan(area);

    const beyond = await get(`${base}/full/${width! + 1},/0/default.jpg`);
    expect(beyond.status).toBe(400);
    expect(((await beyond.json()) as { message: string }).message).toMatch(/maxArea/);
  });
});
