// Large JPEG COGs for the tests and benchmarks of big renders, made with GDAL from the 1000×1000
// test pattern repeated across the image (a VRT of its copies: GDAL streams it, nothing large
// is held in memory). 512² blocks, overviews halving down to one block, as GDAL's COG driver
// writes them.
import { execFileSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const PATTERN = fileURLToPath(new URL("../../samples/test-pattern.png", import.meta.url));
const PATTERN_SIDE = 1000;

/** Writes a `size`×`size` RGB JPEG COG to `file` unless it exists; returns `file`. */
export function patternCog(file: string, size: number): string {
  if (existsSync(file)) return file;
  const vrt = `${file}.vrt`;
  writeFileSync(vrt, repeatedPattern(size));
  try {
    const cog = ["-of", "COG", "-co", "COMPRESS=JPEG", "-co", "QUALITY=85", "-co", "BLOCKSIZE=512", "-co", "OVERVIEWS=AUTO"];
    execFileSync("gdal_translate", ["-q", ...cog, vrt, `${file}.part`]);
    execFileSync("mv", [`${file}.part`, file]);
  } finally {
    rmSync(vrt, { force: true });
  }
  return file;
}

function repeatedPattern(size: number): string {
  const copies: string[] = [];
  for (let y = 0; y < size; y += PATTERN_SIDE) {
    for (let x = 0; x < size; x += PATTERN_SIDE) {
      const w = Math.min(PATTERN_SIDE, size - x);
      const h = Math.min(PATTERN_SIDE, size - y);
      copies.push(
        `<SimpleSource><SourceFilename>${PATTERN}</SourceFilename><SourceBand>BAND</SourceBand>` +
          `<SrcRect xOff="0" yOff="0" xSize="${w}" ySize="${h}"/><DstRect xOff="${x}" yOff="${y}" xSize="${w}" ySize="${h}"/></SimpleSource>`,
      );
    }
  }
  const band = (b: number, colour: string) =>
    `<VRTRasterBand dataType="Byte" band="${b}"><ColorInterp>${colour}</ColorInterp>${copies.join("").replaceAll("BAND", String(b))}</VRTRasterBand>`;
  return `<VRTDataset rasterXSize="${size}" rasterYSize="${size}">${band(1, "Red")}${band(2, "Green")}${band(3, "Blue")}</VRTDataset>`;
}
