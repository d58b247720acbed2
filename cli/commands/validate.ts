// tessera validate <file>: is it a tiled, overviewed COG the decoder serves? Lists every
// problem with what to do; exits 0 when there is none, 1 (refused) otherwise.

import type { Command } from "commander";
import type { Report } from "../cog-check";
import type { Output } from "../output";
import { Refusal } from "../refusal";

export function addValidateCommand(program: Command, output: Output): void {
  program
    .command("validate")
    .description("check that a file is a tiled, overviewed COG the decoder serves, listing every problem with its fix")
    .argument("<file>", "the GeoTIFF to check")
    .addHelpText("after", "\nExit status: 0 the decoder serves it, 1 it does not (every problem listed), 2 usage.")
    .action(async (file: string) => {
      // Loaded here, not at startup: --help and the other commands need none of geotiff and libvips.
      const { checkCog } = await import("../cog-check");
      const report = await checkCog(file);
      output.result(report, () => describe(report));
      const count = report.problems.length;
      if (!report.valid) throw new Refusal(`${file} is not a COG the decoder serves (${count} problem${count === 1 ? "" : "s"})`);
    });
}

/** The report as people read it: the verdict, what the file is, then each problem and its fix. */
function describe({ file, valid, problems, serves, info }: Report): string {
  const only = serves.images ? "" : " as map tiles only (IIIF images need 8-bit samples)";
  const lines = [`${file}: ${valid ? `valid, the decoder serves it${only}` : "not valid"}`];
  if (info) {
    const { width, height, levels, tileWidth, tileHeight, compression, bands } = info;
    lines.push(`  ${width}x${height} pixels, ${levels} level${levels === 1 ? "" : "s"}, ${tileWidth}x${tileHeight} blocks, ${compression}, ${bands} band${bands === 1 ? "" : "s"}`);
  }
  for (const { code, message, fix } of problems) lines.push(`  problem (${code}): ${message}`, `    fix: ${fix}`);
  return lines.join("\n");
}
