// The kinds of costly URL bench:hostile floods with, each what a hostile client would send to buy
// the most work or memory for the least effort; a module of its own, so that the crawlers'
// thread (crawl-thread.ts) builds the same URLs as the bench (`kindUrls`).
import { expressionBomb } from "../test/support/expression-bomb";

/** The side of the bench's large pattern images. */
export const BIG = 6000;

/** Columns of the bundled UTM sample's zoom-12 tiles (row 1427). */
const MAP_COLUMNS = [2218, 2219, 2220, 2221];

export const KINDS: Record<string, (i: number) => string> = {
  // The control: the cheapest answer there is (no route: 404 from the router, no cache, no DO).
  // Its ratio is what any flood costs the viewers here, where the clients, both edges and the
  // decoders share two cores: the floor under every other kind's.
  control: (i) => `/no-such-route/${i}`,
  // The worst legal expression (at the node cap); the rescale makes each of 200 URLs its own.
  expression: (i) => `/tiles/utm-quadrants/WebMercatorQuad/12/${MAP_COLUMNS[i % 4]}/1427@2x.png?expression=${encodeURIComponent(expressionBomb())}&rescale=-4,${4 + (i % 50)}`,
  mosaic: (i) => `/tiles/mosaic32/WebMercatorQuad/12/${MAP_COLUMNS[i % 4]}/1427.png?pixel_selection=mean&bidx=1&rescale=0,${200 + (i % 50)}`,
  upscale: (i) => `/iiif/3/test-pattern/full/%5E${15000 + i},/0/default.png`,
  "no overviews": (i) => `/iiif/3/flat/full/${256 + i},/0/default.jpg`,
  jp2: (i) => `/iiif/3/big-jp2/full/${3000 + i},/0/default.jp2`,
  // Eight large answers, each asked by several clients at once: coalesced, or streamed.
  "large answers": (i) => `/iiif/3/big-png/full/${BIG - (i % 8)},/0/default.png`,
};


/** The URLs of `kind`, as the crawlers' thread asks for them (crawlers-elsewhere.ts). */
export function kindUrls(kind: string): (i: number) => string {
  const urls = KINDS[kind];
  if (!urls) throw new Error(`no kind of URL "${kind}" (the kinds: ${Object.keys(KINDS).join(", ")})`);
  return urls;
}
