// The decoder's own files, found the same way whether it runs from source (regional/*.ts under
// tsx, as the tests and `npm run decoder:source` run it) or from its bundle (dist/decoder/*.js,
// as `npm run decoder`, the image and the service units run it). A bundle keeps each module's
// import.meta.url as the URL of the bundled file, which is what tells the two apart.

import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const bundled = import.meta.url.endsWith(".js");

/** The repository's root: regional/ is one level below it, dist/decoder/ two. */
const root = new URL(bundled ? "../../" : "../", import.meta.url);

/** The bundled sample images, the default TESSERA_DATA_DIR. */
export const SAMPLES_DIR = fileURLToPath(new URL("samples/", root));

/**
 * A worker thread's or render process's script and the Node options it needs. `sourcePath` is
 * its place under regional/ without extension ("encode/openjpeg-worker"); the bundle has each as
 * `<name>.js` beside main.js. Only TypeScript needs tsx's loader, and only a source checkout has it.
 */
export function workerScript(sourcePath: string): { url: URL; execArgv: string[] } {
  if (bundled) return { url: new URL(`./${sourcePath.split("/").pop()}.js`, import.meta.url), execArgv: [] };
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  return { url: new URL(`./${sourcePath}.ts`, import.meta.url), execArgv: ["--import", tsx] };
}
