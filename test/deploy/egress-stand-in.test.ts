// The stand-in for Cloudflare's networking sidecar (infra/containers/egress-stand-in.py) carries a
// container's own connections the way workerd expects them carried: under `wrangler dev` with the
// local runtime, a Worker whose Durable Object intercepts a hostname (interceptOutboundHttp) and
// starts its container without internet receives that container's HTTP request to the hostname,
// and its connection to a server on this machine's own address is refused (what it reaches
// without the stand-in, as that is outside the container network). The Worker and its container are made for the test in
// a folder of their own; the container is the stand-in's image (it has Python) serving on 8080.
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { networkInterfaces, tmpdir } from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { ROOT } from "../../infra/root";
import { containersRuntimeEnv, skipWithoutPodman } from "../support/podman-runtime";
import { freePort, whenReady } from "../support/wrangler-dev";

const NAME = "tessera-egress-check";

const WRANGLER_TOML = `name = "${NAME}"
main = "worker.js"
compatibility_date = "2026-11-17"
[[containers]]
class_name = "Box"
image = "./app/Dockerfile"
max_instances = 1
[[durable_objects.bindings]]
name = "BOX"
class_name = "Box"
[[migrations]]
tag = "v1"
new_sqlite_classes = ["Box"]
`;

// The DO intercepts edge.internal with the Edge entrypoint, starts its container without
// internet, and relays each request to the container's port (retrying while it starts).
const WORKER = `import { DurableObject, WorkerEntrypoint } from "cloudflare:workers";
export class Edge extends WorkerEntrypoint {
  fetch(request) { return new Response("intercepted " + request.method + " " + request.url); }
}
export class Box extends DurableObject {
  async fetch(request) {
    const container = this.ctx.container;
    if (!container.running) {
      await container.interceptOutboundHttp("edge.internal", this.ctx.exports.Edge({ props: {} }));
      container.start({ enableInternet: false });
    }
    const { pathname, search } = new URL(request.url);
    for (let attempt = 0; ; attempt++) {
      try {
        return await container.getTcpPort(8080).fetch("http://app" + pathname + search);
      } catch (err) {
        if (attempt > 120) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }
}
export default { fetch: (request, env) => env.BOX.get(env.BOX.idFromName("one")).fetch(request) };
`;

// GET /?url=U fetches U from inside the container: 200 with what came back, or 502 with the error.
const APP = `import http.server, urllib.parse, urllib.request
class Fetch(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)["url"][0]
        try:
            status, body = 200, urllib.request.urlopen(url, timeout=5).read()
        except Exception as error:
            status, body = 502, repr(error).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("0.0.0.0", 8080), Fetch).serve_forever()
`;

const DOCKERFILE = `FROM localhost/tessera-egress-stand-in:latest
COPY app.py /app.py
ENTRYPOINT ["python3", "/app.py"]
`;

async function writeProject(dir: string): Promise<void> {
  await mkdir(path.join(dir, "app"));
  await writeFile(path.join(dir, "wrangler.toml"), WRANGLER_TOML);
  await writeFile(path.join(dir, "worker.js"), WORKER);
  await writeFile(path.join(dir, "app/app.py"), APP);
  await writeFile(path.join(dir, "app/Dockerfile"), DOCKERFILE);
  // The project's wrangler, so npx finds it here.
  await symlink(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
}

/** This machine's address on its own network (not loopback, not the container bridge). */
const hostAddress = () =>
  Object.entries(networkInterfaces())
    .filter(([name]) => !/^(lo|cni-|podman|veth)/.test(name))
    .flatMap(([, addresses]) => addresses ?? [])
    .find((a) => a.family === "IPv4" && !a.internal)!.address;

const removeContainers = () =>
  spawn("bash", ["-c", `podman ps --all --quiet --filter name=${NAME} | xargs -r podman rm --force --depend --time 5`], { stdio: "ignore" });

it("a container's HTTP to a hostname its Worker intercepts reaches the Worker; without internet, a server outside is not reached", { timeout: 300_000 }, async (ctx) => {
  skipWithoutPodman(ctx);
  const runtime = containersRuntimeEnv();
  const dir = await mkdtemp(path.join(tmpdir(), "tessera-egress-"));
  await writeProject(dir);
  const [port, inspector] = [await freePort(), await freePort()];
  const env = { ...process.env, ...runtime, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", NO_COLOR: "1" };
  const args = ["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector)];
  const dev = spawn("npx", args, { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let outsideHits = 0;
  const outside = createServer((_, res) => void (outsideHits++, res.end("reached"))).listen(0, "0.0.0.0");
  const exited = new Promise((resolve) => dev.once("exit", resolve));
  try {
    await whenReady(dev, "wrangler dev").ready;
    const fetchFromContainer = async (url: string) => {
      const res = await fetch(`http://127.0.0.1:${port}/?url=${encodeURIComponent(url)}`);
      return { status: res.status, body: await res.text() };
    };
    // The container may answer before its egress is routed through the Worker (wrangler sets
    // that up once the container runs): under a loaded CI the first calls can time out, so the
    // call is repeated, for a minute at most, until one is answered.
    const intercepted = async () => {
      const until = Date.now() + 60_000;
      for (;;) {
        const answer = await fetchFromContainer("http://edge.internal/hello?x=1");
        if (answer.status === 200 || Date.now() > until) return answer;
      }
    };
    expect(await intercepted()).toEqual({ status: 200, body: "intercepted GET http://edge.internal/hello?x=1" });
    const { port: outsidePort } = outside.address() as { port: number };
    expect((await fetchFromContainer(`http://${hostAddress()}:${outsidePort}/`)).status).toBe(502);
    expect(outsideHits).toBe(0);
  } finally {
    outside.close();
    process.kill(-dev.pid!, "SIGTERM");
    await exited;
    await new Promise((resolve) => removeContainers().once("exit", resolve));
    await rm(dir, { recursive: true, force: true });
  }
});
