// How the admission DO reaches a decoder: over HTTP at the URL it registered, or, for a decoder
// run as a Cloudflare Container (container://{name}), through that container's Durable Object,
// which relays the request to the container's port (edge/containers/decoder-container.ts).
import { CONTAINER_URL_PREFIX } from "../../shared/registration";

/** Sends `path` (with its query) to the decoder registered as `decoderUrl`. */
export type DecoderFetch = (decoderUrl: string, path: string, init: RequestInit) => Promise<Response>;

export const isContainerUrl = (decoderUrl: string) => decoderUrl.startsWith(CONTAINER_URL_PREFIX);

/** `containers`: the binding of the containers' Durable Objects, where the deployment has one. */
export function decoderFetch(containers?: DurableObjectNamespace): DecoderFetch {
  return async (decoderUrl, path, init) => {
    if (!isContainerUrl(decoderUrl)) return await fetch(decoderUrl + path, init);
    // Registered only by a container's own DO, which exists only where the binding does.
    if (!containers) throw new Error(`${decoderUrl} cannot be reached: DECODER_CONTAINER is not bound`);
    const name = decoderUrl.slice(CONTAINER_URL_PREFIX.length);
    return await containers.get(containers.idFromName(name)).fetch(`http://${name}${path}`, init);
  };
}
