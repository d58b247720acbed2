// Band expressions: the grammar, values and validity against hand-computed pixels, and hostile
// input (every refusal a 400 naming where it went wrong, never a crash or a stack overflow).
import { describe, expect, it } from "vitest";
import { HttpError } from "../../shared/errors";
import { evaluateExpressions, MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LENGTH, parseExpressions, type BandPlane } from "../../shared/maps/expression";

const plane = (values: number[], valid = values.map(() => 1)): BandPlane => ({
  values: Float32Array.from(values),
  valid: Uint8Array.from(valid),
});

/** Evaluates `text` over the named planes (all of one length), as plain arrays. */
function run(text: string, planes: Record<string, BandPlane>) {
  const program = parseExpressions(text, Object.keys(planes));
  const length = Object.values(planes)[0].values.length;
  const out = evaluateExpressions(program, new Map(Object.entries(planes)), length);
  return { values: out.bands.map((b) => Array.from(b)), valid: out.valid.map((v) => Array.from(v)) };
}

function refusal(text: string, names: readonly string[] = ["b1", "b2"]): HttpError {
  try {
    parseExpressions(text, names);
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    expect((e as HttpError).status).toBe(400);
    return e as HttpError;
  }
  throw new Error(`"${text.slice(0, 40)}" was accepted`);
}

describe("band expressions: values", () => {
  it("computes a normalised difference, per pixel", () => {
    const { values, valid } = run("(B08-B04)/(B08+B04)", { B04: plane([1, 2, 3]), B08: plane([3, 2, 9]) });
    expect(values[0]).toEqual([Math.fround(2 / 4), 0, Math.fround(6 / 12)]);
    expect(valid[0]).toEqual([1, 1, 1]);
  });

  it("gives * and / precedence over + and -, left to right, and unary minus binds tightest", () => {
    const { values } = run("b1 + b2 * 2 - 8 / 4 / 2; -b1 - -b2; 10 - 4 - 3; -(b1 + 1) * 2", { b1: plane([3]), b2: plane([5]) });
    expect(values).toEqual([[3 + 10 - 1], [-3 + 5], [3], [-8]]);
  });

  it("reads numbers with decimals and exponents, and the functions sqrt, abs, min and max", () => {
    const { values } = run("0.5 * b1 + 1e1; 2.5E-1 * b1; sqrt(b1); abs(-b1); min(b1, 2, 7); max(b1, 2 * b1, -1)", { b1: plane([16]) });
    expect(values).toEqual([[18], [4], [4], [16], [2], [32]]);
  });

  it("gives one output channel per `;`-separated expression", () => {
    const { values } = run("b1; b2; b1 * b2", { b1: plane([2, 3]), b2: plane([5, 7]) });
    expect(values).toEqual([[2, 3], [5, 7], [10, 21]]);
  });

  it("accepts spaces around every token", () => {
    expect(run("  ( b1 +2 ) *\tb1 ", { b1: plane([3]) }).values).toEqual([[15]]);
  });
});

describe("band expressions: validity", () => {
  it("is valid only where every band the expression uses is valid", () => {
    const { values, valid } = run("b1 + b2", { b1: plane([1, 2, 3, 4], [1, 0, 1, 0]), b2: plane([1, 1, 1, 1], [1, 1, 0, 0]) });
    expect(valid[0]).toEqual([1, 0, 0, 0]);
    expect(values[0][0]).toBe(2);
  });

  it("ignores the validity of bands the expression does not use", () => {
    const { valid } = run("b1 * 2; b2", { b1: plane([1, 2]), b2: plane([1, 2], [0, 1]), b3: plane([0, 0], [0, 0]) });
    expect(valid).toEqual([[1, 1], [0, 1]]);
  });

  it("stays invalid when an invalid band is multiplied by zero", () => {
    expect(run("0 * b1 + 1", { b1: plane([5], [0]) }).valid).toEqual([[0]]);
  });

  it("makes a division by zero an invalid pixel, not Infinity, even when later divided again", () => {
    const { values, valid } = run("b1 / b2; 1 / (1 / b2); b2 / b2", { b1: plane([1, -1, 0, 6]), b2: plane([0, 0, 0, 3]) });
    expect(valid).toEqual([[0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 1]]);
    expect(values[0][3]).toBe(2);
    expect(values.flat().every(Number.isFinite)).toBe(true);
  });

  it("makes a square root of a negative number, and a result beyond float32, invalid", () => {
    const { valid } = run("sqrt(b1); b1 * 1e38 * 1e38", { b1: plane([-4, 4]) });
    expect(valid).toEqual([[0, 1], [0, 0]]);
  });
});

describe("band expressions: refusals", () => {
  it("names the position and what was expected", () => {
    expect(refusal("b1 + ").message).toMatch(/at 6.*expected a number, a band name, a function or "\(" but found the end/);
    expect(refusal("b1 + * b2").message).toMatch(/at 6.*expected a number.*found "\*"/);
    expect(refusal("(b1 + b2").message).toMatch(/at 9.*expected "\)"/);
    expect(refusal("b1 + b2)").message).toMatch(/at 8.*expected an operator, ";" or the end but found "\)"/);
    expect(refusal("b1 $ b2").message).toMatch(/at 4.*"\$"/);
  });

  it.each([
    ["empty", ""],
    ["blank", "   "],
    ["an empty channel", "b1;;b2"],
    ["a trailing `;`", "b1;"],
    ["unbalanced, opening", "((b1)"],
    ["unbalanced, closing", "(b1))"],
    ["an unknown band", "b3"],
    ["a band name in the wrong case", "B1"],
    ["`constructor`", "constructor"],
    ["`__proto__`", "__proto__"],
    ["`toString` called", "toString(b1)"],
    ["`constructor` called", "constructor(b1)"],
    ["an unknown function", "log(b1)"],
    ["a function without its parentheses", "sqrt + b1"],
    ["a function with the wrong number of arguments", "sqrt(b1, b2)"],
    ["min with one argument", "min(b1)"],
    ["an empty argument", "max(b1,)"],
    ["a number past float range", "1e999"],
    ["a number past float range, spelled out", "9".repeat(400)],
    ["a number with two points", "1.2.3"],
    ["a number ending in an exponent mark", "1e"],
    ["hex", "0x10"],
    ["JavaScript", "b1 ** 2"],
    ["a string", "'b1'"],
    ["a template", "`${b1}`"],
    ["a property access", "b1.constructor"],
    ["a comparison", "b1 > b2"],
  ])("refuses %s", (_what, text) => {
    refusal(text);
  });

  it("refuses 10 000 nested parentheses with a 400, not a stack overflow", () => {
    expect(refusal("(".repeat(10_000) + "b1" + ")".repeat(10_000)).message).toMatch(/long/);
  });

  it("refuses nesting deeper than its bound even inside the length bound", () => {
    const depth = MAX_EXPRESSION_DEPTH + 1;
    for (const text of ["(".repeat(depth) + "b1" + ")".repeat(depth), "-".repeat(depth) + "b1", "abs(".repeat(depth) + "b1" + ")".repeat(depth)]) {
      expect(text.length).toBeLessThanOrEqual(MAX_EXPRESSION_LENGTH);
      expect(refusal(text).message).toMatch(/deep/);
    }
    const ok = MAX_EXPRESSION_DEPTH - 1;
    expect(() => parseExpressions("(".repeat(ok) + "b1" + ")".repeat(ok), ["b1"])).not.toThrow();
  });

  it("refuses more characters than its bound", () => {
    const longest = "b1" + "+b1".repeat(Math.floor((MAX_EXPRESSION_LENGTH - 2) / 3));
    expect(() => parseExpressions(longest, ["b1"])).not.toThrow();
    expect(refusal(longest + "+b1", ["b1"]).message).toMatch(/long/);
  });
});
