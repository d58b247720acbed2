// Band expressions, `(B08-B04)/(B08+B04)`: arithmetic over a source's bands, one output channel
// per `;`-separated expression. A request carries them, so they are parsed by a small
// recursive-descent parser with bounded length and depth (never `eval`), names are looked up in
// a Map (no object prototype to reach through `constructor` or `__proto__`), and every refusal
// is a 400 naming the position (one-based) and what was expected there.
//
//   program := expr (";" expr)*
//   expr    := term (("+" | "-") term)*
//   term    := unary (("*" | "/") unary)*
//   unary   := "-" unary | primary
//   primary := number | band | function "(" expr ("," expr)* ")" | "(" expr ")"
import { badRequest } from "../errors";

/** Characters in the whole text; also bounds the work of parsing and the tree's size. */
export const MAX_EXPRESSION_LENGTH = 1024;
/** Nested parentheses, function calls and unary minuses; evaluation recurses this deep too. */
export const MAX_EXPRESSION_DEPTH = 64;

export type ExpressionNode =
  | { kind: "number"; value: number }
  | { kind: "band"; name: string }
  | { kind: "negate"; operand: ExpressionNode }
  | { kind: "binary"; operator: BinaryOperator; left: ExpressionNode; right: ExpressionNode }
  | { kind: "call"; name: FunctionName; args: ExpressionNode[] };

type BinaryOperator = "+" | "-" | "*" | "/";

export interface ExpressionProgram {
  /** One tree per output channel, in the text's order. */
  channels: ExpressionNode[];
  /** The band names the channels read, each once, in order of first use. */
  bands: string[];
}

type FunctionName = "sqrt" | "abs" | "min" | "max";
const FUNCTIONS = new Map<string, { name: FunctionName; minArgs: number; maxArgs: number }>([
  ["sqrt", { name: "sqrt", minArgs: 1, maxArgs: 1 }],
  ["abs", { name: "abs", minArgs: 1, maxArgs: 1 }],
  ["min", { name: "min", minArgs: 2, maxArgs: 16 }],
  ["max", { name: "max", minArgs: 2, maxArgs: 16 }],
]);

type Token =
  | { kind: "number"; value: number; at: number }
  | { kind: "name"; text: string; at: number }
  | { kind: "symbol"; text: string; at: number }
  | { kind: "end"; at: number };

const NUMBER = /[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const SYMBOLS = "+-*/(),;";

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === " " || c === "\t") {
      i++;
      continue;
    }
    const at = i + 1;
    NUMBER.lastIndex = NAME.lastIndex = i;
    const number = NUMBER.exec(text);
    if (number) {
      const value = Number(number[0]);
      if (!Number.isFinite(value) || Math.abs(value) > 3.4e38) throw refuse(at, `the number ${number[0].slice(0, 20)} is beyond float32`);
      tokens.push({ kind: "number", value, at });
      i += number[0].length;
      // `1.2.3`, `1e`, `0x10`: a number running straight into a letter, digit or point is no number.
      if (i < text.length && /[A-Za-z0-9_.]/.test(text[i])) throw refuse(i + 1, `expected an operator after the number but found "${text[i]}"`);
      continue;
    }
    const name = NAME.exec(text);
    if (name) {
      tokens.push({ kind: "name", text: name[0], at });
      i += name[0].length;
      continue;
    }
    if (!SYMBOLS.includes(c)) throw refuse(at, `unexpected character "${c}"`);
    tokens.push({ kind: "symbol", text: c, at });
    i++;
  }
  tokens.push({ kind: "end", at: text.length + 1 });
  return tokens;
}

const refuse = (at: number, what: string) => badRequest(`expression: at ${at}, ${what}`);
const shown = (t: Token) => (t.kind === "end" ? "the end" : `"${t.kind === "number" ? String(t.value) : t.text}"`);

/**
 * Parses `;`-separated expressions over `bandNames`, the names the source offers (`b1`…`bN` for
 * a COG's bands, asset keys such as `B04` for a STAC item); names match exactly. `"any"` accepts
 * every letters-digits-underscore name: the edge checks the syntax before the source, and so
 * its band names, is known.
 */
export function parseExpressions(text: string, bandNames: readonly string[] | "any"): ExpressionProgram {
  if (text.length > MAX_EXPRESSION_LENGTH) throw badRequest(`expression: too long (${text.length} characters, at most ${MAX_EXPRESSION_LENGTH})`);
  const known = bandNames === "any" ? undefined : new Set(bandNames);
  const used = new Set<string>();
  const tokens = tokenize(text);
  let next = 0;
  let depth = 0;

  const peek = () => tokens[next];
  const isSymbol = (s: string) => {
    const t = peek();
    return t.kind === "symbol" && t.text === s;
  };
  const expect = (s: string) => {
    if (!isSymbol(s)) throw refuse(peek().at, `expected "${s}" but found ${shown(peek())}`);
    next++;
  };
  const nested = <T>(at: number, parse: () => T): T => {
    if (++depth > MAX_EXPRESSION_DEPTH) throw refuse(at, `nested too deep (at most ${MAX_EXPRESSION_DEPTH} parentheses, calls and minuses)`);
    const node = parse();
    depth--;
    return node;
  };

  function expression(): ExpressionNode {
    return leftToRight(["+", "-"], term);
  }

  function term(): ExpressionNode {
    return leftToRight(["*", "/"], unary);
  }

  /** `operand (operator operand)*`, folded from the left: `a - b - c` is `(a - b) - c`. */
  function leftToRight(operators: readonly BinaryOperator[], operand: () => ExpressionNode): ExpressionNode {
    let left = operand();
    for (let t = peek(); t.kind === "symbol" && (operators as readonly string[]).includes(t.text); t = peek()) {
      next++;
      left = { kind: "binary", operator: t.text as BinaryOperator, left, right: operand() };
    }
    return left;
  }

  function unary(): ExpressionNode {
    if (!isSymbol("-")) return primary();
    const at = tokens[next++].at;
    return nested(at, () => ({ kind: "negate", operand: unary() }));
  }

  function primary(): ExpressionNode {
    const t = tokens[next];
    if (t.kind === "number") {
      next++;
      return { kind: "number", value: t.value };
    }
    if (t.kind === "symbol" && t.text === "(") {
      next++;
      const inner = nested(t.at, expression);
      expect(")");
      return inner;
    }
    if (t.kind === "name") {
      next++;
      if (isSymbol("(")) return call(t.text, t.at);
      if (known && !known.has(t.text)) throw refuse(t.at, `unknown band "${t.text}" (known: ${[...known].join(", ") || "none"})`);
      used.add(t.text);
      return { kind: "band", name: t.text };
    }
    throw refuse(t.at, `expected a number, a band name, a function or "(" but found ${shown(t)}`);
  }

  function call(name: string, at: number): ExpressionNode {
    const fn = FUNCTIONS.get(name);
    if (!fn) throw refuse(at, `unknown function "${name}" (known: ${[...FUNCTIONS.keys()].join(", ")})`);
    next++; // "("
    return nested(at, () => {
      const args = [expression()];
      while (isSymbol(",")) {
        next++;
        args.push(expression());
      }
      expect(")");
      if (args.length < fn.minArgs || args.length > fn.maxArgs) {
        const wanted = fn.minArgs === fn.maxArgs ? `${fn.minArgs}` : `${fn.minArgs} to ${fn.maxArgs}`;
        throw refuse(at, `${name} takes ${wanted} arguments, not ${args.length}`);
      }
      return { kind: "call", name: fn.name, args };
    });
  }

  const channels = [expression()];
  while (isSymbol(";")) {
    next++;
    channels.push(expression());
  }
  if (peek().kind !== "end") throw refuse(peek().at, `expected an operator, ";" or the end but found ${shown(peek())}`);
  return { channels, bands: [...used] };
}

/**
 * The program written back canonically: no spaces, `;` between channels, numbers as JavaScript
 * writes them, and only the parentheses the tree needs, so every spelling of one tree (`b1 + b2`,
 * `(b1)+b2`) gives one text, and parsing that text gives the same tree again.
 */
export function formatExpressions(program: Pick<ExpressionProgram, "channels">): string {
  return program.channels.map(format).join(";");
}

/** Binding strength: a child binding weaker than its parent needs parentheses. */
const PRECEDENCE = { "+": 1, "-": 1, "*": 2, "/": 2, negate: 3, primary: 4 } as const;

function precedence(node: ExpressionNode): number {
  if (node.kind === "binary") return PRECEDENCE[node.operator];
  return node.kind === "negate" ? PRECEDENCE.negate : PRECEDENCE.primary;
}

function format(node: ExpressionNode): string {
  switch (node.kind) {
    case "number":
      return String(node.value);
    case "band":
      return node.name;
    case "negate":
      return `-${operand(node.operand, PRECEDENCE.negate)}`;
    case "binary": {
      const own = PRECEDENCE[node.operator];
      // Left to right: a right operand of the same strength is a subtree of its own, `a-(b-c)`.
      return `${operand(node.left, own)}${node.operator}${operand(node.right, own + 1)}`;
    }
    case "call":
      return `${node.name}(${node.args.map(format).join(",")})`;
  }
}

function operand(node: ExpressionNode, needed: number): string {
  return precedence(node) < needed ? `(${format(node)})` : format(node);
}

/** Nodes of a program (numbers, bands, operators, calls): what its evaluation costs per pixel. */
export function expressionNodes(program: Pick<ExpressionProgram, "channels">): number {
  const count = (node: ExpressionNode): number => {
    switch (node.kind) {
      case "number":
      case "band":
        return 1;
      case "negate":
        return 1 + count(node.operand);
      case "binary":
        return 1 + count(node.left) + count(node.right);
      case "call":
        return 1 + node.args.reduce((sum, arg) => sum + count(arg), 0);
    }
  };
  return program.channels.reduce((sum, node) => sum + count(node), 0);
}

/** A band's plane and its validity (1 valid, 0 nodata or masked), one entry a pixel. */
export interface BandPlane {
  values: Float32Array;
  valid: Uint8Array;
}

/**
 * Evaluates each channel over `length` pixels. A pixel's result is valid only where every band
 * its channel reads is valid and the result is a finite float32: a division by zero, the square
 * root of a negative number or an overflow makes it invalid, never Infinity or NaN.
 */
export function evaluateExpressions(program: ExpressionProgram, bands: ReadonlyMap<string, BandPlane>, length: number): { bands: Float32Array[]; valid: Uint8Array[] } {
  // Invalid inputs become NaN, which every operation carries through to the result (0 * NaN too).
  const inputs = new Map<string, Float64Array>();
  for (const name of program.bands) {
    const band = bands.get(name)!;
    const values = new Float64Array(length);
    for (let i = 0; i < length; i++) values[i] = band.valid[i] ? band.values[i] : NaN;
    inputs.set(name, values);
  }
  const out = program.channels.map((node) => {
    const values = Float32Array.from(evaluate(node, inputs, length));
    const valid = new Uint8Array(length);
    for (let i = 0; i < length; i++) {
      valid[i] = Number.isFinite(values[i]) ? 1 : 0;
      if (!valid[i]) values[i] = 0;
    }
    return { values, valid };
  });
  return { bands: out.map((c) => c.values), valid: out.map((c) => c.valid) };
}

/** One node over every pixel at once: a plane per node, so a tile costs a few loops, not a tree walk a pixel. */
function evaluate(node: ExpressionNode, inputs: ReadonlyMap<string, Float64Array>, length: number): Float64Array {
  switch (node.kind) {
    case "number":
      return new Float64Array(length).fill(node.value);
    case "band":
      return inputs.get(node.name)!;
    case "negate":
      return evaluate(node.operand, inputs, length).map((v) => -v);
    case "binary": {
      const a = evaluate(node.left, inputs, length);
      const b = evaluate(node.right, inputs, length);
      const out = new Float64Array(length);
      for (let i = 0; i < length; i++) out[i] = applyBinary(node.operator, a[i], b[i]);
      return out;
    }
    case "call":
      return applyCall(node.name, node.args.map((arg) => evaluate(arg, inputs, length)));
  }
}

function applyBinary(operator: BinaryOperator, a: number, b: number): number {
  switch (operator) {
    case "+":
      return a + b;
    case "-":
      return a - b;
    case "*":
      return a * b;
    case "/":
      // NaN, not ±Infinity: a later `1 / x` would turn Infinity back into a valid-looking 0.
      return b === 0 ? NaN : a / b;
  }
}

function applyCall(name: FunctionName, [first, ...rest]: Float64Array[]): Float64Array {
  switch (name) {
    case "sqrt":
      return first.map(Math.sqrt);
    case "abs":
      return first.map(Math.abs);
    case "min":
      return rest.reduce((acc, arg) => acc.map((v, i) => Math.min(v, arg[i])), first);
    case "max":
      return rest.reduce((acc, arg) => acc.map((v, i) => Math.max(v, arg[i])), first);
  }
}
