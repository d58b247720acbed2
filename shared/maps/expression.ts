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
/**
 * Nodes in all channels (numbers, bands, operators, calls; see expressionNodes): each costs a
 * pass over the tile's pixels, so this bounds an evaluation's work, which the length does not
 * (1,024 characters hold 1,023 nodes). (Why this many: docs/maps.md#band-expressions.)
 */
export const MAX_EXPRESSION_NODES = 256;

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
  const program = new Parser(tokenize(text), bandNames === "any" ? undefined : new Set(bandNames)).program();
  const nodes = expressionNodes(program);
  if (nodes > MAX_EXPRESSION_NODES) {
    throw badRequest(`expression: too many nodes (${nodes} numbers, bands, operators and calls, at most ${MAX_EXPRESSION_NODES})`);
  }
  // A tile of constants would paint the whole world, outside the data too.
  if (program.bands.length === 0) throw badRequest("expression: reads no band (a channel may be a constant, but not every channel)");
  return program;
}

/** Numbers, bands, operators (unary minus too) and calls in every channel: an evaluation's work per pixel. */
export function expressionNodes(program: Pick<ExpressionProgram, "channels">): number {
  return program.channels.reduce((sum, node) => sum + nodesIn(node), 0);
}

function nodesIn(node: ExpressionNode): number {
  switch (node.kind) {
    case "number":
    case "band":
      return 1;
    case "negate":
      return 1 + nodesIn(node.operand);
    case "binary":
      return 1 + nodesIn(node.left) + nodesIn(node.right);
    case "call":
      return node.args.reduce((sum, arg) => sum + nodesIn(arg), 1);
  }
}

/** The grammar above, one method a rule, over the tokens of one text. */
class Parser {
  private next = 0;
  private depth = 0;
  /** The bands read, each once, in order of first use. */
  private readonly used = new Set<string>();

  constructor(
    private readonly tokens: Token[],
    /** The names the source offers; undefined: any name. */
    private readonly known: Set<string> | undefined,
  ) {}

  program(): ExpressionProgram {
    const channels = [this.expression()];
    while (this.isSymbol(";")) {
      this.next++;
      channels.push(this.expression());
    }
    const t = this.peek();
    if (t.kind !== "end") throw refuse(t.at, `expected an operator, ";" or the end but found ${shown(t)}`);
    return { channels, bands: [...this.used] };
  }

  private peek(): Token {
    return this.tokens[this.next];
  }

  private isSymbol(s: string): boolean {
    const t = this.peek();
    return t.kind === "symbol" && t.text === s;
  }

  private expect(s: string): void {
    if (!this.isSymbol(s)) throw refuse(this.peek().at, `expected "${s}" but found ${shown(this.peek())}`);
    this.next++;
  }

  private nested<T>(at: number, parse: () => T): T {
    if (++this.depth > MAX_EXPRESSION_DEPTH) throw refuse(at, `nested too deep (at most ${MAX_EXPRESSION_DEPTH} parentheses, calls and minuses)`);
    const node = parse();
    this.depth--;
    return node;
  }

  private expression(): ExpressionNode {
    return this.leftToRight(["+", "-"], () => this.term());
  }

  private term(): ExpressionNode {
    return this.leftToRight(["*", "/"], () => this.unary());
  }

  /** `operand (operator operand)*`, folded from the left: `a - b - c` is `(a - b) - c`. */
  private leftToRight(operators: readonly BinaryOperator[], operand: () => ExpressionNode): ExpressionNode {
    let left = operand();
    for (let t = this.peek(); t.kind === "symbol" && (operators as readonly string[]).includes(t.text); t = this.peek()) {
      this.next++;
      left = { kind: "binary", operator: t.text as BinaryOperator, left, right: operand() };
    }
    return left;
  }

  private unary(): ExpressionNode {
    if (!this.isSymbol("-")) return this.primary();
    const at = this.tokens[this.next++].at;
    return this.nested(at, () => ({ kind: "negate", operand: this.unary() }));
  }

  private primary(): ExpressionNode {
    const t = this.tokens[this.next];
    if (t.kind === "number") {
      this.next++;
      return { kind: "number", value: t.value };
    }
    if (t.kind === "symbol" && t.text === "(") {
      this.next++;
      const inner = this.nested(t.at, () => this.expression());
      this.expect(")");
      return inner;
    }
    if (t.kind === "name") {
      this.next++;
      if (this.isSymbol("(")) return this.call(t.text, t.at);
      if (this.known && !this.known.has(t.text)) throw refuse(t.at, `unknown band "${t.text}" (known: ${[...this.known].join(", ") || "none"})`);
      this.used.add(t.text);
      return { kind: "band", name: t.text };
    }
    throw refuse(t.at, `expected a number, a band name, a function or "(" but found ${shown(t)}`);
  }

  private call(name: string, at: number): ExpressionNode {
    const fn = FUNCTIONS.get(name);
    if (!fn) throw refuse(at, `unknown function "${name}" (known: ${[...FUNCTIONS.keys()].join(", ")})`);
    this.next++; // "("
    return this.nested(at, () => {
      const args = [this.expression()];
      while (this.isSymbol(",")) {
        this.next++;
        args.push(this.expression());
      }
      this.expect(")");
      if (args.length < fn.minArgs || args.length > fn.maxArgs) {
        const wanted = fn.minArgs === fn.maxArgs ? `${fn.minArgs}` : `${fn.minArgs} to ${fn.maxArgs}`;
        throw refuse(at, `${name} takes ${wanted} arguments, not ${args.length}`);
      }
      return { kind: "call", name: fn.name, args };
    });
  }
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

/** A band's plane and its validity (1 valid, 0 nodata or masked), one entry a pixel. */
export interface BandPlane {
  values: Float32Array;
  valid: Uint8Array;
}

/** The channels of a program over one tile's planes, computed a range of pixels at a time. */
export interface ExpressionEvaluation {
  /** One plane a channel, and its validity, filled as ranges are evaluated. */
  bands: Float32Array[];
  valid: Uint8Array[];
  /** Computes pixels [start, end) of every channel. */
  evaluate(start: number, end: number): void;
}

/**
 * Prepares `program` over `bands` (planes of `length` pixels). A pixel's result is valid only
 * where every band its channel reads is valid and the result is a finite float32: a division by
 * zero, the square root of a negative number or an overflow makes it invalid, never Infinity or
 * NaN. The caller chooses the ranges, so that a long evaluation can let other work in between.
 */
export function expressionEvaluation(program: ExpressionProgram, bands: ReadonlyMap<string, BandPlane>, length: number): ExpressionEvaluation {
  const codes = program.channels.map((node) => compile(node, program.bands));
  const stack = Array.from({ length: Math.max(...codes.map((c) => c.depth)) }, () => new Float64Array(CHUNK));
  const inputs = program.bands.map((name) => ({ plane: bands.get(name)!, chunk: new Float64Array(CHUNK) }));
  const out = codes.map(() => ({ values: new Float32Array(length), valid: new Uint8Array(length) }));
  return {
    bands: out.map((c) => c.values),
    valid: out.map((c) => c.valid),
    evaluate(start, end) {
      for (let from = start; from < end; from += CHUNK) {
        const count = Math.min(CHUNK, end - from);
        for (const { plane, chunk } of inputs) load(plane, chunk, from, count);
        codes.forEach((code, c) => {
          run(code.steps, stack, inputs, count);
          store(stack[0], out[c], from, count);
        });
      }
    },
  };
}

/**
 * Pixels evaluated at once: a node is one loop over this many, its operands planes of a stack
 * that stays in the CPU's cache (a plane the size of the tile per node would be allocated, and
 * collected, once a node: the evaluation's cost ten times over).
 */
const CHUNK = 512;

/** A node in postfix order: it takes its operands from the top of the stack and leaves its result there. */
type Step =
  | { kind: "number"; value: number }
  | { kind: "band"; input: number }
  | { kind: "negate" | "sqrt" | "abs" }
  | { kind: "binary"; operator: BinaryOperator }
  | { kind: "min" | "max"; args: number };

/** A channel's steps, and the stack planes they need at most. */
function compile(root: ExpressionNode, bands: readonly string[]): { steps: Step[]; depth: number } {
  const steps: Step[] = [];
  let height = 0;
  let depth = 0;
  const push = (step: Step, operands: number) => {
    steps.push(step);
    height += 1 - operands;
    depth = Math.max(depth, height);
  };
  const visit = (node: ExpressionNode): void => {
    switch (node.kind) {
      case "number":
        return push({ kind: "number", value: node.value }, 0);
      case "band":
        return push({ kind: "band", input: bands.indexOf(node.name) }, 0);
      case "negate":
        visit(node.operand);
        return push({ kind: "negate" }, 1);
      case "binary":
        visit(node.left);
        visit(node.right);
        return push({ kind: "binary", operator: node.operator }, 2);
      case "call":
        node.args.forEach(visit);
        return push(node.name === "min" || node.name === "max" ? { kind: node.name, args: node.args.length } : { kind: node.name }, node.args.length);
    }
  };
  visit(root);
  return { steps, depth };
}

/** A band's pixels [from, from + count) as float64, NaN where invalid: every operation carries NaN through to the result (0 * NaN too). */
function load({ values, valid }: BandPlane, chunk: Float64Array, from: number, count: number): void {
  for (let i = 0; i < count; i++) chunk[i] = valid[from + i] ? values[from + i] : NaN;
}

/** Runs `steps` over the chunk's `count` pixels, whose bands are loaded in `inputs`: the result is in stack[0]. */
function run(steps: Step[], stack: Float64Array[], inputs: { chunk: Float64Array }[], count: number): void {
  let top = -1;
  for (const step of steps) {
    switch (step.kind) {
      case "number":
        stack[++top].fill(step.value, 0, count);
        break;
      case "band":
        stack[++top].set(count === CHUNK ? inputs[step.input].chunk : inputs[step.input].chunk.subarray(0, count));
        break;
      case "negate":
      case "sqrt":
      case "abs":
        unary(step.kind, stack[top], count);
        break;
      case "binary":
        top--;
        binary(step.operator, stack[top], stack[top + 1], count);
        break;
      case "min":
      case "max":
        top -= step.args - 1;
        for (let j = 1; j < step.args; j++) extreme(step.kind, stack[top], stack[top + j], count);
        break;
    }
  }
}

function unary(kind: "negate" | "sqrt" | "abs", r: Float64Array, count: number): void {
  if (kind === "negate") for (let i = 0; i < count; i++) r[i] = -r[i];
  else if (kind === "sqrt") for (let i = 0; i < count; i++) r[i] = Math.sqrt(r[i]);
  else for (let i = 0; i < count; i++) r[i] = Math.abs(r[i]);
}

/** a = a (operator) b, pixel by pixel: one loop an operator, so no pixel pays for a branch on it. */
function binary(operator: BinaryOperator, a: Float64Array, b: Float64Array, count: number): void {
  switch (operator) {
    case "+":
      for (let i = 0; i < count; i++) a[i] += b[i];
      return;
    case "-":
      for (let i = 0; i < count; i++) a[i] -= b[i];
      return;
    case "*":
      for (let i = 0; i < count; i++) a[i] *= b[i];
      return;
    case "/":
      // NaN, not ±Infinity: a later `1 / x` would turn Infinity back into a valid-looking 0.
      for (let i = 0; i < count; i++) a[i] = b[i] === 0 ? NaN : a[i] / b[i];
      return;
  }
}

/** a = min(a, b) or max(a, b), NaN where either is. */
function extreme(kind: "min" | "max", a: Float64Array, b: Float64Array, count: number): void {
  if (kind === "min") for (let i = 0; i < count; i++) a[i] = Math.min(a[i], b[i]);
  else for (let i = 0; i < count; i++) a[i] = Math.max(a[i], b[i]);
}

/** A channel's results as float32, invalid (and 0) where not finite. */
function store(result: Float64Array, channel: { values: Float32Array; valid: Uint8Array }, from: number, count: number): void {
  const { values, valid } = channel;
  for (let i = 0; i < count; i++) {
    const v = Math.fround(result[i]);
    const finite = Number.isFinite(v);
    values[from + i] = finite ? v : 0;
    valid[from + i] = finite ? 1 : 0;
  }
}
