// Parsing of configuration variables, shared by the Worker (wrangler vars) and the decoder
// (process env). A bad value fails loudly and names the variable.

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`${variable} ${message}`);
    this.name = "ConfigError";
  }
}

export const badConfig = (variable: string, message: string) => new ConfigError(variable, message);

/** A whole-number variable; `fallback` is used when it is unset or empty. */
export function intVar<T extends object>(
  vars: T,
  name: keyof T & string,
  { min = 0, max = Number.MAX_SAFE_INTEGER, fallback }: { min?: number; max?: number; fallback?: number } = {},
): number {
  const raw: unknown = vars[name];
  if ((raw === undefined || raw === "") && fallback !== undefined) return fallback;
  const text = String(raw ?? "").trim();
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    throw badConfig(name, `must be a whole number ${range}, got ${JSON.stringify(raw ?? null)}`);
  }
  return Number(text);
}

/** A decimal variable in [min, max] (ratios); `fallback` is used when it is unset or empty. */
export function numberVar<T extends object>(
  vars: T,
  name: keyof T & string,
  { min = 0, max = 1, fallback }: { min?: number; max?: number; fallback?: number } = {},
): number {
  const raw: unknown = vars[name];
  if ((raw === undefined || raw === "") && fallback !== undefined) return fallback;
  const text = String(raw ?? "").trim();
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(text) || Number(text) < min || Number(text) > max) {
    throw badConfig(name, `must be a number from ${min} to ${max}, got ${JSON.stringify(raw ?? null)}`);
  }
  return Number(text);
}

/** An http(s) URL variable, as written; undefined when unset or empty. */
export function urlVar<T extends object>(vars: T, name: keyof T & string): string | undefined {
  const raw: unknown = vars[name];
  if (raw === undefined || raw === "") return undefined;
  const url = URL.parse(String(raw));
  // Credentials in an address end up in every message and log line that names it: refused,
  // and never repeated in the refusal.
  if (url && (url.username || url.password)) {
    throw badConfig(name, "must not carry credentials (user:password@): give tokens and keys in their own variables");
  }
  if (url?.protocol !== "http:" && url?.protocol !== "https:") {
    const got = String(raw).includes("@") ? "a value with an '@' (not repeated)" : JSON.stringify(raw);
    throw badConfig(name, `must be an http(s) URL, got ${got}`);
  }
  return String(raw);
}
