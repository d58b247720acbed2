// What the container's DO needs of Cloudflare's container runtime (ctx.container): whether the
// container runs, starting it, and its decoder's port. Where no such runtime can exist (the
// tests, on a machine without Cloudflare's network), TEST_CONTAINER_STAND_IN names a stand-in
// that runs the real decoder as a local process in its place (test/support/container-stand-in.ts).
import { badConfig } from "../../shared/config";

export interface ContainerRuntime {
  running(): Promise<boolean>;
  /** Starts the container with its decoder's environment; the decoder listens shortly after. */
  start(env: Record<string, string>): Promise<void>;
  /** Sends a request to the decoder's port in the container. */
  fetch(request: Request): Promise<Response>;
  stop(): Promise<void>;
}

/** The decoder's port inside its container: the image's default. */
export const DECODER_PORT = 9100;

export function containerRuntime(container: Container | undefined, standIn: string | undefined): ContainerRuntime {
  if (container) return cloudflareRuntime(container);
  if (standIn) return standInRuntime(standIn);
  throw badConfig("DECODER_CONTAINER", "is a container's Durable Object: deploy it with its [[containers]] entry (wrangler deploy --env containers)");
}

function cloudflareRuntime(container: Container): ContainerRuntime {
  return {
    running: async () => container.running,
    // The decoder reads its store over the internet (S3, R2); nothing else reaches it but this DO.
    start: async (env) => container.start({ env, enableInternet: true }),
    fetch: (request) => container.getTcpPort(DECODER_PORT).fetch(request),
    stop: () => container.destroy(),
  };
}

/**
 * The tests' stand-in for one container, over HTTP at `at`: GET says whether its decoder process
 * runs and where it listens, POST starts it with the given environment, POST …/exit kills it.
 */
function standInRuntime(at: string): ContainerRuntime {
  const state = async () => (await (await fetch(at)).json()) as { running: boolean; url?: string };
  return {
    running: async () => (await state()).running,
    start: async (env) => void (await fetch(at, { method: "POST", body: JSON.stringify(env) })).body?.cancel(),
    stop: async () => void (await fetch(`${at}/exit`, { method: "POST" })).body?.cancel(),
    fetch: async (request) => {
      const { url } = await state();
      const target = new URL(request.url);
      return await fetch(`${url}${target.pathname}${target.search}`, request);
    },
  };
}
