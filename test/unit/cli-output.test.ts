// The tessera command's output: results on stdout (text or one JSON document), errors on
// stderr, and upload progress as a bar on a terminal or as plain lines elsewhere.
import { describe, expect, it } from "vitest";
import { Output, progressReporter, type OutStream } from "../../cli/output";

/** A stream that keeps what is written; a terminal when `isTTY`. */
function stream(isTTY = false): OutStream & { text: string } {
  return { isTTY, text: "", write(chunk: string) { this.text += chunk; return true; } };
}

describe("progress", () => {
  it("prints a plain line at each tenth when not on a terminal", () => {
    const err = stream();
    const progress = progressReporter("upload a.tif", 1000, err);
    for (let done = 0; done <= 1000; done += 50) progress.update(done);
    progress.stop();
    const lines = err.text.trimEnd().split("\n");
    expect(lines).toHaveLength(10);
    expect(lines[0]).toBe("upload a.tif: 10% (100 of 1000 bytes)");
    expect(lines[9]).toBe("upload a.tif: 100% (1000 of 1000 bytes)");
  });

  it("draws a bar in place on a terminal", () => {
    const err = stream(true);
    const progress = progressReporter("upload a.tif", 1000, err);
    progress.update(500);
    progress.stop();
    expect(err.text).toContain("upload a.tif [");
    expect(err.text).toContain("50% 500/1000 bytes");
    // Redrawn in place: one line, ended when the bar stops.
    expect(err.text.trimEnd()).not.toContain("\n");
  });
});

describe("output", () => {
  it("prints a result as text, or as one JSON document with --json", () => {
    const [out, err] = [stream(), stream()];
    const output = new Output(out, err);
    output.result({ ok: true }, () => "all good");
    output.json = true;
    output.result({ ok: true }, () => "all good");
    expect(out.text).toBe('all good\n{"ok":true}\n');
  });

  it("puts an error on stderr, and with --json on stdout too unless a result already says it", () => {
    const [out, err] = [stream(), stream()];
    const output = new Output(out, err);
    output.json = true;
    output.error("usage", "TESSERA_S3_BUCKET is required");
    expect(err.text).toBe("tessera: TESSERA_S3_BUCKET is required\n");
    expect(JSON.parse(out.text)).toEqual({ error: "usage", message: "TESSERA_S3_BUCKET is required" });
    output.result({ valid: false }, () => "");
    output.error("refused", "not valid");
    expect(out.text.trimEnd().split("\n")).toHaveLength(2);
  });
});
