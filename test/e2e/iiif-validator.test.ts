// Every check of the official IIIF Image API validator (IIIF/image-validator) up to level 3, in
// Image API 3.0 and 2.1 (the validator's "2.0" tests, which are 2.x's), each test named after
// the check it stands for, against the stack as installed: wrangler.toml's defaults and the
// bundled samples, where `test-pattern` is the validator's own test image (100 squares of 100 px,
// each one colour), as a JPEG COG. The validator itself cannot run here (a fresh CI machine cannot
// fetch it, and its code is not ours to copy): these say what it asserts, in this suite's words,
// and docs/api.md says how to run the real one by hand.
//
// Where the validator draws at random (five of the hundred squares, a size within a range, a
// random string), these take fixed values; where it reads five squares of a whole image, these read
// all hundred. A square matches when the commonest colour of the validator's box inside it is
// within TOLERANCE of the pattern's own colour in every channel, as the validator's does.
//
// Where a check asks for more than the specification allows, the test asserts the specification
// and says so in its name: size_noup's "!2000,3000" (a size that never upscales) and size_up's
// "^max" (the largest size the declared maxArea allows). The validator's format_jp2 and format_pdf
// (a libmagic binding Debian does not ship) and format_webp (bytes compared with a str) fail under
// Python 3 whatever the server sends: these check what they mean to, the files' signatures.
//
// Every check runs twice: on the stack as installed, and on a stack that enforces access
// (AUTH_SECRET set) with a restricted source among the open ones, which must not change what
// the open ones answer.
//
//   validator check          level 2.x/3.0  asserts (plus, here, what the comment on each test adds)
//   info_json                0/0   info.json's fields, and its id is the URI asked for minus /info.json
//   id_basic, id_squares     0/0   full/max is an image of the pattern
//   format_jpg               0/0   jpg is a JPEG
//   size_nofull              -/0   3.0 has no size "full"
//   baseurl_redirect         1/1   the base URI redirects
//   cors                     1/1   Access-Control-Allow-Origin: *
//   jsonld                   1/1   application/ld+json when Accept asks for it
//   id_error_random          1/1   an unknown identifier is 404
//   id_error_unescaped       1/1   "[frob]" unescaped is 400 or 404
//   id_error_escapedslash    1/1   an identifier with an unescaped "/" is 404
//   id_escaped               1/1   an escaped identifier ("%2D") is the same image
//   region_pixels            1/1   x,y,w,h inside one square is that square
//   region_square            3/1   square is square (the validator's own 2.1 URL is 1.x's)
//   size_wc, size_ch         1/1   w, and ,h
//   size_region              1/1   a square's region at w,h
//   size_noup                -/1   3.0 upscales only with "^"
//   region_percent           2/2   pct:x,y,w,h inside one square is that square
//   size_percent             1/2   pct:n
//   size_bwh                 2/2   !w,h
//   size_wh                  2/1   w,h (distorting)
//   rot_full_basic           2/2   90, 180, 270
//   rot_region_basic         2/2   a square's region turned 180
//   quality_color, _grey, _bitonal  2/2   3 channels; 1 channel; black and white only
//   format_png               2/2   png is a PNG
//   size_up                  3/3   upscaling (2.x: any size; 3.0: with "^" only)
//   rot_full_non90, rot_region_non90  3/3   any angle answers
//   rot_mirror, rot_mirror_180       3/3   "!0", "!180"
//   linkheader_canonical, _profile   3/3   Link: rel="canonical", rel="profile"
//   format_gif, _tif, _webp, _jp2, _pdf   3/3   each format is what it says
//   *_error_random (region, size, rotation, quality, format)   1/1   malformed is 400
// (info_xml and format_conneg are 1.x's only.)
import { randomBytes, randomUUID } from "node:crypto";
import { copyFile, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../infra/root";
import { startStack, type Stack, type StackOptions } from "../../infra/local/stack";
import { gdalDecodeJp2, type DecodedPixels } from "../support/jp2";
import { TEST_PATTERN_PNG } from "../support/pixels";

const ID = "test-pattern";
/** The validator's colour tolerance: under 6 in each channel. */
const TOLERANCE = 5;
/** Squares for checks that make one request a square: the corners, where a wrong orientation shows, and one inside. */
const SAMPLED: [number, number][] = [
  [0, 0],
  [9, 0],
  [0, 9],
  [9, 9],
  [4, 6],
];

/** The stack the checks run against: each configuration's in turn. */
let stack: Stack;

interface Configuration {
  name: string;
  /** The stack's options, given its data directory (undefined: the bundled samples). */
  options(dataDir: string | undefined): StackOptions;
  /** A restricted source to put beside the samples, by its catalog entry's access rule. */
  restricted?: { id: string; access: { profile: "active"; degradedWidth: number } };
}

const CONFIGURATIONS: Configuration[] = [
  { name: "as installed", options: () => ({}) },
  {
    name: "enforcing access, a restricted source beside the open ones",
    options: (dataDir) => ({ decoderEnv: { TESSERA_SOURCE: "local", TESSERA_DATA_DIR: dataDir! }, vars: { AUTH_SECRET: randomBytes(32).toString("hex") } }),
    restricted: { id: "restricted", access: { profile: "active", degradedWidth: 250 } },
  },
];

type Version = 2 | 3;
interface Params {
  id?: string;
  region?: string;
  size?: string;
  rotation?: string;
  quality?: string;
  format?: string;
}
/** An image request as the validator builds one: every parameter not given at its default. */
function path(v: Version, p: Params = {}): string {
  const size = p.size ?? (v === 3 ? "max" : "full");
  return `/iiif/${v}/${p.id ?? ID}/${p.region ?? "full"}/${size}/${p.rotation ?? "0"}/${p.quality ?? "default"}.${p.format ?? "jpg"}`;
}

async function answer(p: string, init?: RequestInit) {
  const res = await fetch(stack.url + p, init);
  return { res, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** The answer to an image request that must succeed, and its pixels. */
async function image(v: Version, p: Params = {}) {
  const { res, bytes } = await answer(path(v, p));
  expect(res.status, `${path(v, p)}: ${res.status === 200 ? "" : bytes.toString()}`).toBe(200);
  return { res, bytes, img: await rgb(bytes) };
}

/**
 * The status of a GET sent with its path exactly as written, as the validator's urllib sends it:
 * fetch would turn a "\\" into "/" itself, so the server's own reading of it would go untested.
 */
function rawStatus(p: string): Promise<number> {
  const { hostname, port } = new URL(stack.url);
  return new Promise((resolve, reject) => {
    request({ hostname, port, path: p }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode!));
    })
      .on("error", reject)
      .end();
  });
}

/** Decoded to 8-bit RGB, whatever the format, channels or palette. */
async function rgb(input: Buffer | string): Promise<DecodedPixels> {
  const { data, info } = await sharp(input).removeAlpha().toColourspace("srgb").raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

const PATTERN = rgb(TEST_PATTERN_PNG);
const PATTERN_GREY = sharp(TEST_PATTERN_PNG).toColourspace("b-w").raw().toBuffer();
/** The colour of the pattern's square in column `col`, row `row`, read at its centre. */
async function colour(col: number, row: number): Promise<number[]> {
  const { data } = await PATTERN;
  const at = ((row * 100 + 50) * 1000 + col * 100 + 50) * 3;
  return [...data.subarray(at, at + 3)];
}
/** Its grey in a gray answer: the luminance of that colour, as sharp converts the pattern to b-w. */
async function grey(col: number, row: number): Promise<number[]> {
  const g = (await PATTERN_GREY)[(row * 100 + 50) * 1000 + col * 100 + 50];
  return [g, g, g];
}

interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}
const whole = (img: DecodedPixels): Box => ({ left: 0, top: 0, width: img.width, height: img.height });
/** The validator's box inside square (col, row) of a width×height picture of the pattern: 13 px in from its corner. */
function squareBox(col: number, row: number, width: number, height: number): Box {
  const w = Math.floor(width / 10);
  const h = Math.floor(height / 10);
  return { left: col * w + 13, top: row * h + 13, width: w - 13, height: h - 13 };
}

/** The commonest colour in `box` (counted on at most some 200×200 of its pixels, for ^max's 9,400² answer). */
function commonest(img: DecodedPixels, box: Box): number[] {
  const step = Math.max(1, Math.floor(Math.min(box.width, box.height) / 200));
  const counts = new Map<number, number>();
  for (let y = box.top; y < box.top + box.height; y += step) {
    for (let x = box.left; x < box.left + box.width; x += step) {
      const at = (y * img.width + x) * img.channels;
      const key = (img.data[at] << 16) | (img.data[at + 1] << 8) | img.data[at + 2];
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  const [key] = [...counts].reduce((a, b) => (b[1] > a[1] ? b : a));
  return [key >> 16, (key >> 8) & 255, key & 255];
}

/** "" when `box` shows square (col, row), else what it shows instead. */
async function mismatch(img: DecodedPixels, box: Box, col: number, row: number, expected = colour): Promise<string> {
  const want = await expected(col, row);
  const got = commonest(img, box);
  return got.every((c, i) => Math.abs(c - want[i]) <= TOLERANCE) ? "" : `square ${col},${row} is ${got}, not ${want}`;
}

/** The squares of a whole picture of the pattern that do not match (all hundred read). */
async function wrongSquares(img: DecodedPixels, expected = colour): Promise<string[]> {
  const wrong: string[] = [];
  for (let row = 0; row < 10; row++) {
    for (let col = 0; col < 10; col++) {
      wrong.push(await mismatch(img, squareBox(col, row, img.width, img.height), col, row, expected));
    }
  }
  return wrong.filter(Boolean);
}

/** The validator's two corner boxes of a turned or mirrored whole image, 64 px each, and the squares they must show. */
async function corners(img: DecodedPixels, topLeft: [number, number], bottomRight: [number, number]): Promise<string[]> {
  const at = (left: number): Box => ({ left, top: left, width: 64, height: 64 });
  return [await mismatch(img, at(12), ...topLeft), await mismatch(img, at(912), ...bottomRight)].filter(Boolean);
}

/** The URIs of a Link header by their rel (rels are case-insensitive and space-separated). */
function links(header: string | null): Map<string, string> {
  const out = new Map<string, string>();
  for (const [, uri, rels] of (header ?? "").matchAll(/<([^>]*)>\s*;\s*rel="?([^",;]*)"?/g)) {
    for (const rel of rels.toLowerCase().split(" ")) out.set(rel, uri);
  }
  return out;
}

/**
 * The validator's random parameters are drawn from "0" to "z", which holds "\\": URL parsing reads
 * it as "/", so some one draw in 13 to 25 splits the parameter in two and the request seems to
 * name an identifier with a "/". Each error check takes one draw without it and two with it.
 */
const DRAWS = {
  region: ["Zq7;b@", "ab\\cd9", "\\Xk2mQ"],
  size: ["Q8e=Kz", "PWO\\e]", "\\aB3;x"],
  rotation: ["z9;Q", "1\\2x", "\\abc"],
  quality: ["ZTE^Ia", "ZT\\E^I", "\\ZTE^I"],
  format: ["q;z", "q\\z", "\\zz"],
};

describe.each(CONFIGURATIONS)("$name", (configuration) => {
  let dataDir: string | undefined;
  beforeAll(async () => {
    const { restricted } = configuration;
    if (restricted) {
      // The samples, and a copy of the test pattern restricted by its catalog entry beside it.
      dataDir = await mkdtemp(join(tmpdir(), "tessera-validator-"));
      for (const name of (await readdir(`${ROOT}samples`)).filter((n) => n.endsWith(".tif"))) await copyFile(`${ROOT}samples/${name}`, join(dataDir, name));
      await copyFile(`${ROOT}samples/${ID}.tif`, join(dataDir, `${restricted.id}.tif`));
      await writeFile(join(dataDir, `${restricted.id}.tessera.json`), JSON.stringify({ access: restricted.access }));
    }
    stack = await startStack(configuration.options(dataDir));
  });
  afterAll(async () => {
    await stack?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  if (configuration.restricted) {
    const { id } = configuration.restricted;
    it(`the restricted source is restricted: its info.json declares a probe, its image is 401 (so the open sources' checks run beside it)`, async () => {
      const info = JSON.parse((await answer(`/iiif/3/${id}/info.json`)).bytes.toString()) as { service?: { type: string }[] };
      expect(info.service?.map((s) => s.type)).toEqual(["AuthProbeService2"]);
      expect((await answer(path(3, { id }))).res.status).toBe(401);
      expect((await answer(`/iiif/3/${id}~degraded/full/max/0/default.jpg`)).res.status).toBe(200);
    });
  }
  describe.each([3, 2] as const)("Image API %i.x", validatorChecks);
});

/** The validator's checks of Image API `v`, against the current stack. */
function validatorChecks(v: Version): void {
  const base = `/iiif/${v}/${ID}`;

  describe("image information", () => {
    for (const id of [ID, "utm-quadrants"]) {
      it(`info_json: ${id}'s info.json has every field the validator reads, its id the URI asked for${id === ID ? "" : " (its seeAlso links the map's TileJSON)"}`, async () => {
        const { res, bytes } = await answer(`/iiif/${v}/${id}/info.json`);
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toMatch(/^application\/(ld\+)?json\b/);
        const info = JSON.parse(bytes.toString()) as Record<string, any>;
        expect(Number.isInteger(info.width) && Number.isInteger(info.height)).toBe(true);
        // With the default PLAIN_ID_MODE (revalidate): the base URI asked for, exactly.
        expect(info[v === 3 ? "id" : "@id"]).toBe(`${stack.url}/iiif/${v}/${id}`);
        expect(info["@context"]).toBe(`http://iiif.io/api/image/${v}/context.json`);
        expect(info.protocol).toBe("http://iiif.io/api/image");
        if (v === 3) expect(["level0", "level1", "level2"]).toContain(info.profile);
        else expect(info.profile[0]).toMatch(/^http:\/\/iiif\.io\/api\/image\/2\/level[012]\.json$/);
        expect(info.sizes.length).toBeGreaterThan(0);
        for (const s of info.sizes) expect(Number.isInteger(s.width) && Number.isInteger(s.height), JSON.stringify(s)).toBe(true);
        expect(info.tiles.length).toBeGreaterThan(0);
        for (const t of info.tiles) expect(Number.isInteger(t.width) && Array.isArray(t.scaleFactors), JSON.stringify(t)).toBe(true);
        if (v === 2) return;
        expect(info.type).toBe("ImageService3");
        // Renamed or removed in 3.0 (the validator warns).
        for (const gone of ["license", "attribution", "logo"]) expect(info).not.toHaveProperty(gone);
        if ("rights" in info) expect(info.rights).toMatch(/^http/);
        for (const list of ["extraQualities", "extraFormats", "extraFeatures"]) expect(Array.isArray(info[list]), list).toBe(true);
        // Linking properties: lists of objects with an id and a type, each label a map of lists.
        for (const name of ["service", "partOf", "seeAlso"]) {
          if (!(name in info)) continue;
          for (const item of info[name]) {
            expect(item, name).toMatchObject({ id: expect.any(String), type: expect.any(String) });
            for (const values of Object.values(item.label ?? {})) expect(Array.isArray(values), name).toBe(true);
          }
        }
        if (id !== ID) expect(info.seeAlso.length).toBeGreaterThan(0);
      });
    }
    it("baseurl_redirect: the base URI is 303 to its info.json", async () => {
      const { res } = await answer(base, { redirect: "manual" });
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe(`${stack.url}${base}/info.json`);
    });
    it("cors: info.json allows every origin", async () => {
      const { res } = await answer(`${base}/info.json`, { headers: { origin: "http://iiif.io/" } });
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
    });
    it("jsonld: info.json is application/ld+json when the Accept header asks for it", async () => {
      const { res } = await answer(`${base}/info.json`, { headers: { accept: "application/ld+json" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/ld\+json\b/);
    });
    it("linkheader_canonical: an image's Link names its canonical URI", async () => {
      const { res } = await image(v);
      expect(links(res.headers.get("link")).get("canonical")).toBe(`${stack.url}${path(v)}`);
    });
    it("linkheader_profile: an image's Link names the version's compliance profile", async () => {
      const { res } = await image(v);
      expect(links(res.headers.get("link")).get("profile")).toBe(`http://iiif.io/api/image/${v}/level2.json`);
    });
  });

  describe("identifier", () => {
    it("id_basic: the whole image at its largest size is a JPEG", async () => {
      const { bytes } = await image(v);
      expect(await sharp(bytes).metadata()).toMatchObject({ format: "jpeg", width: 1000, height: 1000 });
    });
    it("id_squares: it is the test pattern, every square", async () => {
      expect(await wrongSquares((await image(v)).img)).toEqual([]);
    });
    it("id_escaped: an escaped identifier (test%2Dpattern) is the same image", async () => {
      const escaped = await image(v, { id: "test%2Dpattern" });
      expect(escaped.res.headers.get("etag")).toBe((await image(v)).res.headers.get("etag"));
    });
    it("id_error_random: an identifier no source has is 404", async () => {
      expect((await answer(path(v, { id: randomUUID() }))).res.status).toBe(404);
    });
    it("id_error_unescaped: an unescaped [frob] is 400 or 404", async () => {
      expect([400, 404]).toContain(await rawStatus(path(v, { id: "[frob]" })));
    });
    it("id_error_escapedslash: an unescaped slash in the identifier (a/b) is 404", async () => {
      expect((await answer(path(v, { id: "a/b" }))).res.status).toBe(404);
    });
  });

  describe("region", () => {
    it("region_pixels: x,y,74,74 inside a square shows that square", async () => {
      for (const [col, row] of SAMPLED) {
        const { img } = await image(v, { region: `${col * 100 + 13},${row * 100 + 13},74,74` });
        expect([img.width, img.height]).toEqual([74, 74]);
        expect(await mismatch(img, whole(img), col, row)).toBe("");
      }
    });
    it("region_percent: pct:x,y,9,9 inside a square shows that square", async () => {
      for (const [col, row] of SAMPLED) {
        const { img } = await image(v, { region: `pct:${col * 10 + 1},${row * 10 + 1},9,9` });
        expect([img.width, img.height]).toEqual([90, 90]);
        expect(await mismatch(img, whole(img), col, row)).toBe("");
      }
    });
    it("region_square: square is a square (of this square image, the whole pattern)", async () => {
      const { img } = await image(v, { region: "square" });
      expect([img.width, img.height]).toEqual([1000, 1000]);
      expect(await wrongSquares(img)).toEqual([]);
    });
  });

  describe("size", () => {
    for (const [check, size, width, height] of [
      ["size_wc", "457,", 457, 457],
      ["size_ch", ",611", 611, 611],
      ["size_percent", "pct:63", 630, 630],
      ["size_bwh", "!523,681", 523, 523],
      ["size_wh", "389,742", 389, 742],
    ] as const) {
      it(`${check}: ${size} is ${width}×${height}, every square where it should be`, async () => {
        const { img } = await image(v, { size });
        expect([img.width, img.height]).toEqual([width, height]);
        expect(await wrongSquares(img)).toEqual([]);
      });
    }
    it("size_region: a square's region at s,s is s×s of its colour", async () => {
      for (const [i, [col, row]] of SAMPLED.entries()) {
        const s = [35, 47, 64, 81, 90][i];
        const { img } = await image(v, { region: `${col * 100},${row * 100},100,100`, size: `${s},${s}` });
        expect([img.width, img.height]).toEqual([s, s]);
        expect(await mismatch(img, whole(img), col, row)).toBe("");
      }
    });
    if (v === 2) {
      it("size_up: a size above the image's (,1337) is upscaled", async () => {
        const { img } = await image(v, { size: ",1337" });
        expect([img.width, img.height]).toEqual([1337, 1337]);
        expect(await wrongSquares(img)).toEqual([]);
      });
    } else {
      it("size_up: only with ^: ,1337 is 400; ^1337,1337, ^,1337, ^1337,, ^pct:200, ^!2000,500 and ^!2000,3000 are served", async () => {
        expect((await answer(path(v, { size: ",1337" }))).res.status).toBe(400);
        for (const [size, side] of [
          ["^1337,1337", 1337],
          ["^,1337", 1337],
          ["^1337,", 1337],
          ["^pct:200", 2000],
          ["^!2000,500", 500],
          ["^!2000,3000", 2000],
        ] as const) {
          const { img } = await image(v, { size });
          expect([img.width, img.height], size).toEqual([side, side]);
          expect(await wrongSquares(img), size).toEqual([]);
        }
      });
      it("size_up (^max, as the specification has it, not the validator's 1000×1000): the largest size info.json's maxArea allows", async () => {
        const { maxArea } = JSON.parse((await answer(`${base}/info.json`)).bytes.toString()) as { maxArea: number };
        const { img } = await image(v, { size: "^max" });
        expect(img.width).toBe(img.height);
        expect(img.width ** 2).toBeLessThanOrEqual(maxArea);
        expect((img.width + 1) ** 2).toBeGreaterThan(maxArea);
        expect(await wrongSquares(img)).toEqual([]);
      });
      it("size_noup: sizes above the image's without ^ (1337,1337, ,1337, 1337, and pct:200) are 400", async () => {
        for (const size of ["1337,1337", ",1337", "1337,", "pct:200"]) {
          expect((await answer(path(v, { size }))).res.status, size).toBe(400);
        }
      });
      it("size_noup (!2000,3000, as the specification has it, not the validator's \"not 200\"): a box larger than the image is the image, 1000×1000", async () => {
        const { img } = await image(v, { size: "!2000,3000" });
        expect([img.width, img.height]).toEqual([1000, 1000]);
      });
      it("size_nofull: 3.0 has no size full: 400", async () => {
        expect((await answer(path(v, { size: "full" }))).res.status).toBe(400);
      });
    }
  });

  describe("rotation", () => {
    for (const [rotation, topLeft, bottomRight] of [
      ["180", [9, 9], [0, 0]],
      ["90", [0, 9], [9, 0]],
      ["270", [9, 0], [0, 9]],
    ] as const) {
      it(`rot_full_basic: ${rotation} turns the whole image (square ${topLeft} at the top left, ${bottomRight} at the bottom right)`, async () => {
        const { img } = await image(v, { rotation });
        expect(Math.abs(img.width - 1000)).toBeLessThanOrEqual(1);
        expect(await corners(img, [...topLeft], [...bottomRight])).toEqual([]);
      });
    }
    it("rot_region_basic: a square's region turned 180 shows that square", async () => {
      for (const [col, row] of SAMPLED) {
        const { img } = await image(v, { region: `${col * 100 + 13},${row * 100 + 13},76,76`, rotation: "180" });
        expect(Math.abs(img.width - 76)).toBeLessThanOrEqual(1);
        expect(await mismatch(img, whole(img), col, row)).toBe("");
      }
    });
    it("rot_full_non90: 37° answers, the canvas grown to the turned image's bounds", async () => {
      const { img } = await image(v, { rotation: "37" });
      const side = 1000 * (Math.cos((37 * Math.PI) / 180) + Math.sin((37 * Math.PI) / 180));
      expect(Math.abs(img.width - side)).toBeLessThanOrEqual(1);
      expect(Math.abs(img.height - side)).toBeLessThanOrEqual(1);
    });
    it("rot_region_non90: a square's region at any angle answers, its middle that square's colour", async () => {
      for (const [i, [col, row]] of SAMPLED.entries()) {
        const { img } = await image(v, { region: `${col * 100},${row * 100},100,100`, rotation: ["1", "137", "359", "222", "45"][i] });
        const middle = { left: Math.floor(img.width / 2) - 10, top: Math.floor(img.height / 2) - 10, width: 20, height: 20 };
        expect(await mismatch(img, middle, col, row)).toBe("");
      }
    });
    it("rot_mirror: !0 mirrors (square 9,0 at the top left, 0,9 at the bottom right)", async () => {
      const { img } = await image(v, { rotation: "!0" });
      expect(img.width).toBe(1000);
      expect(await corners(img, [9, 0], [0, 9])).toEqual([]);
    });
    it("rot_mirror_180: !180 mirrors then turns, upside down (square 0,9 at the top left, 9,0 at the bottom right)", async () => {
      const { img } = await image(v, { rotation: "!180" });
      expect(img.width).toBe(1000);
      expect(await corners(img, [0, 9], [9, 0])).toEqual([]);
    });
  });

  describe("quality", () => {
    it("quality_color: color is a colour image of the pattern", async () => {
      const { bytes, img } = await image(v, { quality: "color" });
      expect((await sharp(bytes).metadata()).channels).toBe(3);
      expect(await wrongSquares(img)).toEqual([]);
    });
    it("quality_grey: gray is one channel, each square its colour's luminance", async () => {
      const { bytes, img } = await image(v, { quality: "gray" });
      expect((await sharp(bytes).metadata()).channels).toBe(1);
      expect(await wrongSquares(img, grey)).toEqual([]);
    });
    it("quality_bitonal: bitonal is one channel, black and white (99 % of its pixels within 5 of 0 or 255, a jpg's ringing aside)", async () => {
      const { bytes } = await image(v, { quality: "bitonal" });
      expect((await sharp(bytes).metadata()).channels).toBe(1);
      const { data } = await sharp(bytes).extractChannel(0).raw().toBuffer({ resolveWithObject: true });
      const extreme = data.filter((p) => p <= 5 || p >= 250).length;
      expect(extreme / data.length).toBeGreaterThan(0.99);
    });
  });

  describe("format", () => {
    for (const [format, type, decoded] of [
      ["jpg", "image/jpeg", "jpeg"],
      ["png", "image/png", "png"],
      ["gif", "image/gif", "gif"],
      ["tif", "image/tiff", "tiff"],
    ] as const) {
      it(`format_${format}: ${format} is ${type}, the pattern`, async () => {
        const { res, bytes, img } = await image(v, { format });
        expect(res.headers.get("content-type")).toBe(type);
        expect((await sharp(bytes).metadata()).format).toBe(decoded);
        expect(await wrongSquares(img)).toEqual([]);
      });
    }
    it("format_webp: webp is a RIFF WEBP file, the pattern", async () => {
      const { res, bytes, img } = await image(v, { format: "webp" });
      expect(res.headers.get("content-type")).toBe("image/webp");
      expect(bytes.toString("latin1", 0, 4) + bytes.toString("latin1", 8, 12)).toBe("RIFFWEBP");
      expect(await wrongSquares(img)).toEqual([]);
    });
    it("format_jp2: jp2 is a JPEG 2000 file (its signature box, brand jp2), which GDAL decodes to the pattern", async () => {
      const { res, bytes } = await answer(path(v, { format: "jp2" }));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/jp2");
      expect(bytes.subarray(0, 12).toString("hex")).toBe("0000000c6a5020200d0a870a");
      expect(bytes.toString("latin1", 20, 24)).toBe("jp2 ");
      expect(await wrongSquares(await gdalDecodeJp2(bytes))).toEqual([]);
    });
    it("format_pdf: pdf is a PDF document of one page, the pattern as its image", async () => {
      const { res, bytes } = await answer(path(v, { format: "pdf" }));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/pdf");
      const text = bytes.toString("latin1");
      expect(text.startsWith("%PDF-")).toBe(true);
      expect(text.match(/\/Type \/Page\b/g)).toHaveLength(1);
      // The page's image is a JPEG stream, read as it is embedded.
      const start = bytes.indexOf(Buffer.from([0xff, 0xd8, 0xff]));
      const jpeg = bytes.subarray(start, bytes.indexOf("endstream", start));
      expect(await wrongSquares(await rgb(jpeg))).toEqual([]);
    });
  });

  describe("malformed parameters are 400, also when a \\ in them reads as a /", () => {
    for (const [param, check] of [
      ["region", "region_error_random"],
      ["size", "size_error_random"],
      ["rotation", "rot_error_random"],
      ["quality", "quality_error_random"],
      ["format", "format_error_random"],
    ] as const) {
      it(`${check}: a random ${param} (${DRAWS[param].join(" ")}) is 400`, async () => {
        for (const draw of DRAWS[param]) {
          expect(await rawStatus(path(v, { [param]: draw })), draw).toBe(400);
        }
      });
    }
  });
}
