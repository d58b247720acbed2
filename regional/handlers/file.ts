// GET /v1/file/{id}?version=V: the stored bytes of the pinned snapshot, streamed; no header parse,
// no decode. The request's deadline bounds the open; the stream runs until its client goes away
// (each store read has its own timeouts), so a long transfer is never cut short once its headers
// are out. It runs under the transfers' own limiter, not the decodes'.
import { mosaicIsMapOnly } from "../../shared/maps/mosaic-json";
import { VERSION_HEADER } from "../../shared/protocol";
import type { Handler } from "../http/router";
import { sourceChunks } from "../source/chunks";
import { knownSourceId } from "../../shared/source-id";

export const file: Handler<{ id: string }> = async ({ params, version, signal, client }, decoder) => {
  const source = await decoder.catalog.open(knownSourceId(params.id), version, signal);
  if (source.document) {
    await source.close();
    throw mosaicIsMapOnly(params.id);
  }
  return {
    status: 200,
    headers: { "content-type": "image/tiff", "content-length": String(source.size), [VERSION_HEADER]: source.version },
    body: sourceChunks(source, client),
  };
};
