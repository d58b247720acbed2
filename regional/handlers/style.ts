// GET /v1/styles/{name}: a stored Raster Style document, `{prefix}{name}.style.json` beside the
// sources, checked by the same schema the edge applies it with (400 naming the bad field), and
// answered as its text. Unknown: 404.
import { badRequest, HttpError, notFound } from "../../shared/errors";
import { MAX_STYLE_DOCUMENT_LENGTH, parseStyleDocument } from "../../shared/maps/style";
import { readDocument } from "../mosaic/mosaic";
import type { SourceCatalog } from "../source/source";

export async function readStyle(catalog: SourceCatalog, name: string, signal: AbortSignal): Promise<{ text: string; version: string }> {
  const source = await catalog.openKey(`${catalog.prefix ?? ""}${name}.style.json`, signal).catch((e: unknown) => {
    throw e instanceof HttpError && e.status === 404 ? notFound(`unknown style "${name}"`) : e;
  });
  try {
    // Four bytes a character at most: past that, too long before a byte is read.
    if (source.size > 4 * MAX_STYLE_DOCUMENT_LENGTH) {
      throw badRequest(`style "${name}": the document is ${source.size} bytes, more than a ${MAX_STYLE_DOCUMENT_LENGTH}-character document can be`);
    }
    const text = await readDocument(source, signal);
    parseStyleDocument(text, name);
    return { text, version: source.version };
  } finally {
    await source.close();
  }
}
