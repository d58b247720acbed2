// Two edge locations in front of one admission DO, the second faked on this machine (a workerd
// of its own, calling the first's DO through Miniflare's dev registry), as the benches that
// put crawlers in another Cloudflare location run them: each location has its own cache, and
// every decode either one asks for is admitted by the one DO.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ locations: 2 });
});
afterAll(() => stack?.stop());

const released = async () => Number(/^tessera_admission_released_total (\S+)$/m.exec(await (await fetch(`${stack.url}/metrics`)).text())?.[1]);

async function tile(location: string): Promise<string | null> {
  const res = await fetch(`${location}/iiif/3/test-pattern/256,256,256,256/256,/0/default.jpg`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("image/jpeg");
  await res.arrayBuffer();
  return res.headers.get("x-tessera-cache");
}

it("caches apart and admits through the first location's DO (the second location faked: another workerd)", async () => {
  const [here, elsewhere] = stack.locations;
  expect(here).toBe(stack.url);
  expect(elsewhere).not.toBe(here);
  expect(await tile(here)).toBe("miss");
  const before = await released();
  expect(await tile(here)).toBe("hit");
  expect(await released()).toBe(before); // a hit takes no lease
  // The other location's cache has seen neither the tile nor the source's info: two misses (the
  // info, then the tile), both admitted by the same DO.
  expect(await tile(elsewhere)).toBe("miss");
  await expect.poll(released).toBe(before + 2);
  expect(await tile(elsewhere)).toBe("hit");
});
