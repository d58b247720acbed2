// Waking the decoder containers: an admission DO that finds no live decoder asks each container's
// DO to start its container; each then heartbeats once its decoder answers (decoder-container.ts).
import type { Env } from "../env";
import { containerName, type ContainerSettings } from "./settings";

/** The admission DO's call that starts a container (and its heartbeats) if it is not running. */
export const CONTAINER_WAKE_PATH = "/__container/wake";

/**
 * Wakes every container of the deployment (each starts its container and heartbeats), from an
 * admission DO that found no live decoder. Idempotent; a failure is the next one's to retry.
 */
export function wakeContainers(env: Env, settings: ContainerSettings): Promise<unknown> {
  const namespace = env.DECODER_CONTAINER!;
  return Promise.allSettled(
    Array.from({ length: settings.count }, async (_, i) => {
      const res = await namespace.get(namespace.idFromName(containerName(i))).fetch(`http://container${CONTAINER_WAKE_PATH}`, { method: "POST" });
      await res.body?.cancel();
    }),
  );
}
