// Band expressions: the grammar, values and validity against hand-computed pixels, evaluated a
// range at a time as the decoder does, and hostile input (every refusal a 400 naming where it
// went wrong, never a crash or a stack overflow), the node cap at and past its bound.
import { describe, expect, it } from "vitest";
import { HttpError } from "../../shared/errors";
import {
  expressionEvaluation,
  expressionNodes,
  MAX_EXPRESSION_DEPTH,
  MAX_EXPRESSION_LENGTH,
  MAX_EXPRESSION_NODES,
  parseExpressions,
  type BandPlane,
} from "../../shared/maps/expression";
import { parseTileRequest } from "../../shared/maps/tile-request";

const plane = (values: number[], valid = values.map(() => 1)): BandPlane => ({
  values: Float32Array.from(values),
  valid: Uint8Array.from(valid),
});

/** Evaluates `text` over the named planes (all of one length), in ranges ending at `ends` (else at once), as plain arrays. */
function run(text: string, planes: Record<string, BandPlane>, ends?: number[]) {
  const program = parseExpressions(text, Object.keys(planes));
  const length = Object.values(planes)[0].values.length;
  const out = expressionEvaluation(program, new Map(Object.entries(planes)), length);
  let start = 0;
  for (const end of ends ?? [length]) {
    out.evaluate(start, end);
    start = end;
  }
  return { values: out.bands.map((b) => Array.from(b)), valid: out.valid.map((v) => Array.from(v)) };
}

/** An expression of exactly `nodes` nodes, 1 + 2 × terms characters: `b1+1+1…`, a leading `-` when even. */
function chain(nodes: number): string {
  return (nodes % 2 ? "b1" : "-b1") + "+1".repeat(Math.floor((nodes - 1) / 2));
}

function refusal(text: string, names: readonly string[] | "any" = ["b1", "b2"]): HttpError {
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

  it("gives the same channels whatever ranges it is evaluated in, across its internal chunks", () => {
    const length = 5000;
    const b1 = plane(Array.from({ length }, (_, i) => (i % 97) - 40), Array.from({ length }, (_, i) => (i % 13 ? 1 : 0)));
    const b2 = plane(Array.from({ length }, (_, i) => (i % 31) - 15));
    const text = "min(b1, b2, 3) / (b2 - 1) + sqrt(abs(b1)) * -b2; max(b1 * b2, 1e3 - b1)";
    const whole = run(text, { b1, b2 });
    expect(whole.valid[0].filter((v) => v === 0).length).toBeGreaterThan(400); // nodata, and divisions by zero
    expect(run(text, { b1, b2 }, [1, 511, 512, 513, 1700, 4999, 5000])).toEqual(whole);
    // Pixel by pixel, in float64 then rounded to float32, as the definition says.
    for (let i = 0; i < length; i++) {
      const [x, y] = [b1.values[i], b2.values[i]];
      const v = Math.fround(Math.min(x, y, 3) / (y - 1) + Math.sqrt(Math.abs(x)) * -y);
      expect(whole.valid[0][i], `pixel ${i}`).toBe(b1.valid[i] && y !== 1 ? 1 : 0);
      if (whole.valid[0][i]) expect(whole.values[0][i], `pixel ${i}`).toBe(v);
      expect(whole.values[1][i], `pixel ${i}`).toBe(b1.valid[i] ? Math.fround(Math.max(x * y, 1e3 - x)) : 0);
    }
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

  it("refuses an expression that reads no band (a tile of constants), at the edge too", () => {
    expect(refusal("1+2").message).toMatch(/reads no band/);
    expect(refusal("1; 2; 3", "any").message).toMatch(/reads no band/);
    expect(run("b1; 0; 255", { b1: plane([7]) }).values).toEqual([[7], [0], [255]]);
  });

  it("refuses more characters than its bound", () => {
    // Few nodes, many characters: the length is a bound of its own.
    const longest = "b1 * 1." + "0".repeat(MAX_EXPRESSION_LENGTH - 8) + "1";
    expect(longest.length).toBe(MAX_EXPRESSION_LENGTH);
    expect(() => parseExpressions(longest, ["b1"])).not.toThrow();
    expect(refusal(longest + "0", ["b1"]).message).toMatch(/long/);
  });
});

describe("band expressions: the node cap", () => {
  const refusedForNodes = (text: string, nodes: number, names: readonly string[] | "any" = ["b1"]) => {
    expect(text.length).toBeLessThanOrEqual(MAX_EXPRESSION_LENGTH);
    expect(refusal(text, names).message).toBe(`expression: too many nodes (${nodes} numbers, bands, operators and calls, at most ${MAX_EXPRESSION_NODES})`);
  };

  it("counts numbers, bands, operators, unary minuses and calls, over every channel", () => {
    const nodes = (text: string) => expressionNodes(parseExpressions(text, "any"));
    expect(nodes("b1")).toBe(1);
    expect(nodes("(B08-B04)/(B08+B04)")).toBe(7);
    expect(nodes("-b1")).toBe(2);
    expect(nodes("min(b1, 2, sqrt(b2))")).toBe(5);
    expect(nodes("b1; b2 * 2; -b3")).toBe(6);
    for (const n of [1, 2, 17, MAX_EXPRESSION_NODES]) expect(nodes(chain(n))).toBe(n);
  });

  it(`takes ${MAX_EXPRESSION_NODES} nodes and refuses one more, naming the count and the cap`, () => {
    expect(expressionNodes(parseExpressions(chain(MAX_EXPRESSION_NODES), ["b1"]))).toBe(MAX_EXPRESSION_NODES);
    refusedForNodes(chain(MAX_EXPRESSION_NODES + 1), MAX_EXPRESSION_NODES + 1);
  });

  it("refuses the most nodes the length allows: 1,023 in 1,024 characters", () => {
    const densest = chain(MAX_EXPRESSION_LENGTH - 1);
    expect(densest.length).toBe(MAX_EXPRESSION_LENGTH);
    refusedForNodes(densest, MAX_EXPRESSION_LENGTH - 1);
    refusedForNodes("b1" + "*-1".repeat(340), 1 + 340 * 3); // a minus a term: three nodes in three characters
  });

  it("counts nested calls of 16 arguments: 15 of them inside one at the cap, 16 past it", () => {
    const inner = `min(b1${",1".repeat(15)})`; // 17 nodes
    const outer = (k: number) => `max(${Array(k).fill(inner).join(",")})`;
    expect(MAX_EXPRESSION_NODES).toBe(1 + 15 * 17);
    expect(expressionNodes(parseExpressions(outer(15), ["b1"]))).toBe(MAX_EXPRESSION_NODES);
    refusedForNodes(outer(16), 1 + 16 * 17);
  });

  it("refuses past the cap in the tile URL's grammar, which the edge runs before admission", () => {
    const query = (text: string) => new URLSearchParams({ expression: text });
    const at = { tileMatrixSet: "WebMercatorQuad", z: "4", x: "9", y: "5.png" };
    expect(parseTileRequest(at, query(chain(MAX_EXPRESSION_NODES))).expression).toBe(chain(MAX_EXPRESSION_NODES));
    expect(() => parseTileRequest(at, query(chain(MAX_EXPRESSION_NODES + 1)))).toThrow(/too many nodes \(257 .*at most 256\)/);
  });
});
