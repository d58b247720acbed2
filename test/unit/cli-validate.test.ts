// tessera validate on the bundled COG and on files GDAL writes wrong in one way each: the
// exit code, the problem codes and the gdal_translate line of each fix.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Report } from "../../cli/cog-check";
import { REPO, SAMPLE, tessera } from "./cli-helpers";

let dir: string;
const file = (name: string) => path.join(dir, name);

/** gdal_translate of the test pattern's PNG into `name`. */
const gdal = (name: string, args: string[]) => execFileSync("gdal_translate", ["-q", ...args, `${REPO}samples/test-pattern.png`, file(name)], { stdio: "pipe" });

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-cli-"));
  gdal("strips.tif", []);
  gdal("no-overviews.tif", ["-co", "TILED=YES", "-co", "COMPRESS=DEFLATE"]);
  gdal("sixteen-bit.tif", ["-of", "COG", "-ot", "UInt16", "-co", "COMPRESS=DEFLATE"]);
  gdal("sixteen-bit-utm.tif", ["-of", "COG", "-ot", "UInt16", "-co", "COMPRESS=DEFLATE", "-a_srs", "EPSG:32633", "-a_ullr", "500000", "5000000", "510000", "4990000"]);
  // 172°E to 188°E: across the antimeridian, which the map routes serve on both sides.
  gdal("sixteen-bit-antimeridian.tif", ["-of", "COG", "-ot", "UInt16", "-co", "COMPRESS=DEFLATE", "-a_srs", "EPSG:4326", "-a_ullr", "172", "10", "188", "-6"]);
  gdal("lerc.tif", ["-of", "COG", "-co", "COMPRESS=LERC"]);
  await writeFile(file("not-a-tiff.tif"), "this is text, not an image\n");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** `tessera --json validate <path>`: the exit code and the report. */
async function validateJson(target: string): Promise<{ code: number; report: Report }> {
  const run = await tessera(["--json", "validate", target]);
  return { code: run.code, report: JSON.parse(run.stdout) as Report };
}

const codes = (report: Report) => report.problems.map((p) => p.code);

// Each test starts a process; on a busy machine that takes a few seconds.
describe("tessera validate", { timeout: 20_000 }, () => {
  it("passes the bundled COG: exit 0, a one-line verdict and what the file is", async () => {
    const run = await tessera(["validate", SAMPLE]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${SAMPLE}: valid, the decoder serves it\n  1000x1000 pixels, 3 levels, 256x256 blocks, jpeg, 3 bands\n`);
  });

  it("passes the bundled COG with --json: the report and its info", async () => {
    const { code, report } = await validateJson(SAMPLE);
    expect(code).toBe(0);
    expect(report).toEqual({
      file: SAMPLE,
      valid: true,
      problems: [],
      serves: { images: true, tiles: false },
      info: { width: 1000, height: 1000, levels: 3, tileWidth: 256, tileHeight: 256, compression: "jpeg", bands: 3 },
    });
  });

  it("refuses a stripped TIFF without overviews: both problems, each with a JPEG COG line for 8-bit RGB", async () => {
    const { code, report } = await validateJson(file("strips.tif"));
    expect(code).toBe(1);
    expect(codes(report)).toEqual(["strips", "no_overviews"]);
    for (const { fix } of report.problems) {
      expect(fix).toContain(`gdal_translate -of COG -co COMPRESS=JPEG -co BLOCKSIZE=512 -co OVERVIEWS=AUTO ${file("strips.tif")} ${file("strips.cog.tif")}`);
    }
  });

  it("refuses a tiled TIFF without overviews, in text: the problem, its fix, and a summary on stderr", async () => {
    const run = await tessera(["validate", file("no-overviews.tif")]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("problem (no_overviews): no overviews: every zoomed-out view of the 1000x1000 image decodes all of it");
    expect(run.stdout).toContain(`fix: add overviews: gdal_translate -of COG -co COMPRESS=JPEG`);
    expect(run.stderr).toBe(`tessera: ${file("no-overviews.tif")} is not a COG the decoder serves (1 problem)\n`);
  });

  it("refuses 16-bit samples of a picture that is not georeferenced with the decoder's own message, and a fix that scales to 8 bits, losslessly stored", async () => {
    const { code, report } = await validateJson(file("sixteen-bit.tif"));
    expect(code).toBe(1);
    expect(report.problems).toEqual([
      {
        code: "bit_depth",
        message: "IIIF images of sources with 16-bit samples are not supported (8-bit only; map tiles serve them)",
        fix: `rewrite it as 8-bit unsigned samples: gdal_translate -of COG -ot Byte -scale -co COMPRESS=DEFLATE -co BLOCKSIZE=512 -co OVERVIEWS=AUTO ${file("sixteen-bit.tif")} ${file("sixteen-bit.cog.tif")}`,
      },
    ]);
  });

  it("passes 16-bit samples of a georeferenced file, served as map tiles only", async () => {
    const { code, report } = await validateJson(file("sixteen-bit-utm.tif"));
    expect(code).toBe(0);
    expect(report).toMatchObject({ valid: true, problems: [], serves: { images: false, tiles: true } });
    const run = await tessera(["validate", file("sixteen-bit-utm.tif")]);
    expect(run.stdout).toContain("valid, the decoder serves it as map tiles only (IIIF images need 8-bit samples)");
  });

  it("passes 16-bit samples of a file across the antimeridian, served as map tiles only", async () => {
    const { code, report } = await validateJson(file("sixteen-bit-antimeridian.tif"));
    expect(code).toBe(0);
    expect(report).toMatchObject({ valid: true, problems: [], serves: { images: false, tiles: true } });
  });

  it("refuses a codec the decoder does not read (LERC)", async () => {
    const { code, report } = await validateJson(file("lerc.tif"));
    expect(code).toBe(1);
    expect(report.problems).toMatchObject([{ code: "compression", message: "LERC-compressed sources are not supported" }]);
    expect(report.info).toMatchObject({ compression: "lerc", levels: 2 });
  });

  it("refuses a file that is not a TIFF, with a line that converts it", async () => {
    const { code, report } = await validateJson(file("not-a-tiff.tif"));
    expect(code).toBe(1);
    expect(report).toMatchObject({ valid: false, info: null, problems: [{ code: "not_tiff" }] });
    expect(report.problems[0].fix).toContain("gdal_translate -of COG -co COMPRESS=DEFLATE");
  });

  it("refuses a missing file", async () => {
    const { code, report } = await validateJson(file("missing.tif"));
    expect(code).toBe(1);
    expect(report.problems).toEqual([{ code: "not_found", message: `${file("missing.tif")}: no such file`, fix: "check the path" }]);
  });
});
