// MAX_WIDTH through the whole stack: the edge declares it and resolves "max" within it, and the
// decoder answers exactly the size the edge resolved (it does not know the limit itself).
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../infra/root";
import { startStack, type Stack } from "../../infra/local/stack";

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    decoderEnv: { TESSERA_DATA_DIR: `${ROOT}samples` },
    vars: { MAX_WIDTH: "500" },
  });
});
afterAll(() => stack?.stop());

const get = (path: string) => fetch(stack.url + path);
async function dims(path: string): Promise<number[]> {
  const res = await get(path);
  expect(res.status, `${path}: ${res.status === 200 ? "" : await res.clone().text()}`).toBe(200);
  const m = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
  return [m.width, m.height];
}

describe.each([3, 2] as const)("MAX_WIDTH 500 on the 1000x1000 pattern, Image API %i.x", (v) => {
  const base = `/iiif/${v}/test-pattern`;
  const maxSize = v === 3 ? "max" : "full";

  it(`${maxSize} is the largest size within the limit, aspect kept`, async () => {
    expect(await dims(`${base}/full/${maxSize}/0/default.jpg`)).toEqual([500, 500]);
    expect(await dims(`${base}/0,0,1000,500/${maxSize}/0/default.jpg`)).toEqual([500, 250]);
  });

  it("an explicit size at the limit is that size, and one beyond it is 400", async () => {
    expect(await dims(`${base}/full/500,/0/default.jpg`)).toEqual([500, 500]);
    const res = await get(`${base}/full/501,/0/default.jpg`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/maxWidth/);
  });

  it("the canonical Link names max for the largest size", async () => {
    const res = await get(`${base}/full/500,/0/default.jpg`);
    expect(res.headers.get("link")).toContain(`/full/${maxSize}/0/default.jpg>;rel="canonical"`);
  });
});
