import { Agent, request } from "node:http";
import { DECODER, signRequest } from "../shared/protocol";
const agent = new Agent({ keepAlive: true, maxSockets: 8 });
const port = 9188;
const get = (path: string, headers: Record<string,string>) => new Promise<void>((resolve, reject) => { const r = request({ host: "127.0.0.1", port, path, agent, headers }, (res) => { res.on("data", () => {}); res.on("end", () => res.statusCode === 200 ? resolve() : reject(new Error(String(res.statusCode)))); }); r.on("error", reject); r.end(); });
const infoPath = DECODER.info("rgb-jpeg");
const info = await (await fetch(`http://127.0.0.1:${port}${infoPath}`, { headers: { "x-tessera-signature": await signRequest("s", "GET", infoPath) } })).json() as { version: string };
const urls: [string, string][] = [];
for (let y = 0; y < 8192; y += 256) for (let x = 0; x < 8192; x += 256) { const p = DECODER.image("rgb-jpeg", `${x},${y},256,256/256,256/0/default.jpg`, info.version); urls.push([p, await signRequest("s", "GET", p)]); }
for (let round = 0; round < Number(process.argv[2] ?? 3); round++) {
  let next = 0; const t = performance.now();
  await Promise.all(Array.from({ length: 8 }, async () => { while (next < urls.length) { const [p, s] = urls[next++]; await get(p, { "x-tessera-signature": s }); } }));
  console.log(round, (urls.length / ((performance.now() - t) / 1000)).toFixed(0), "req/s");
}
agent.destroy();
