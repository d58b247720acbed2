// A stand-in for Cloudflare's container runtime, which cannot exist on this machine: each
// "container" is the real decoder run as a local process with the environment the container's
// Durable Object starts it with (only its listen address is this machine's loopback and a free
// port). Over HTTP, for the DO (edge/containers/runtime.ts) and the tests:
//   GET  /containers/{name}         {"running": bool, "url": where its decoder listens}
//   POST /containers/{name}         starts it with the JSON body as its environment
//   POST /containers/{name}/exit    kills it, as a container that crashes or is evicted
//   GET  /containers/{name}/starts  the environment of each start, in order
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { killDecoder, startDecoder, type DecoderProcess } from "../../infra/local/decoders.ts";
import { useDecoderBuild } from "./decoder-build.ts";

declare module "vitest" {
  export interface ProvidedContext {
    containerStandInUrl: string;
  }
}

interface StoodIn {
  decoder?: DecoderProcess;
  starts: Record<string, string>[];
}

export default async function setup(project: TestProject) {
  await useDecoderBuild();
  const containers = new Map<string, StoodIn>();
  const of = (name: string) => containers.get(name) ?? containers.set(name, { starts: [] }).get(name)!;
  const running = (c: StoodIn) => c.decoder !== undefined && c.decoder.process.exitCode === null && c.decoder.process.signalCode === null;

  const routes: Record<string, (c: StoodIn, body: string) => Promise<unknown>> = {
    "GET ": async (c) => ({ running: running(c), url: running(c) ? c.decoder!.url : undefined }),
    "POST ": async (c, body) => {
      const env = JSON.parse(body) as Record<string, string>;
      c.starts.push(env);
      if (!running(c)) c.decoder = await startDecoder({ ...env, TESSERA_DECODER_HOST: "127.0.0.1", TESSERA_DECODER_PORT: "0" });
      return {};
    },
    "POST /exit": async (c) => {
      if (c.decoder) await killDecoder(c.decoder);
      return {};
    },
    "GET /starts": async (c) => c.starts,
  };

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const [, name, rest = ""] = /^\/containers\/([a-z0-9-]+)(\/[a-z]+)?$/.exec(req.url ?? "") ?? [];
    const route = name && routes[`${req.method} ${rest}`];
    if (!route) return void res.writeHead(404).end();
    let body = "";
    for await (const chunk of req) body += chunk;
    try {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(await route(of(name), body)));
    } catch (err) {
      res.writeHead(500).end(String(err));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("containerStandInUrl", `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return async () => {
    server.close();
    await Promise.all([...containers.values()].map((c) => c.decoder && killDecoder(c.decoder)));
  };
}
