// GET /v1/styles/{name}: a stored Raster Style document, `{prefix}{name}.style.json` beside the
// sources, checked by the same schema the edge applies it with (400 naming the bad field), and
// answered as its text. Unknown: 404.
import { badRequest, HttpError, notFound } from "../../shared/errors";
import { MAX_STYLE_DOCUMENT_LENGTH, parseStyleDocument } from "../../shared/maps/style";
import { VERSION_HEADER } from "../../shared/protocol";
import type { Handler } from "../http/router";
import { readDocument } from "../mosaic/mosaic";
import { knownSourceId } from "../../shared/source-id";

export const style: Handler<{ name: string }> = async ({ params, signal }, { catalog }) => {
  const { name } = params;
  const key = `${catalog.prefix ?? ""}${knownSourceId(name)}.style.json`;
  const source = await catalog.openKey(key, signal).catch((e: unknown) => {
    throw e instanceof HttpError && e.status === 404 ? notFound(`unknown style "${name}"`) : e;
  });
  try {
    // Four bytes a character at most: past that, too long before a byte is read.
    if (source.size > 4 * MAX_STYLE_DOCUMENT_LENGTH) {
      throw badRequest(`style "${name}": the document is ${source.size} bytes, more than a ${MAX_STYLE_DOCUMENT_LENGTH}-character document can be`);
    }
    const text = await readDocument(source, signal);
    parseStyleDocument(text, name);
    return { status: 200, headers: { "content-type": "application/json; charset=utf-8", [VERSION_HEADER]: source.version }, body: Buffer.from(text) };
  } finally {
    await source.close();
  }
};
