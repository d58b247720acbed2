// The decoder's log: one JSON record a line, errors on stderr, the rest on stdout, each with its
// time; the request's id is in every record that concerns a request. "warn" is a publisher's
// mistake the decoder works around (a description it cannot read), not its own failure.

export interface LogRecord {
  level: "info" | "warn" | "error";
  msg: string;
  [field: string]: unknown;
}

export type Log = (record: LogRecord) => void;

export function jsonLog(record: LogRecord): void {
  const line = JSON.stringify({ time: new Date().toISOString(), ...record }) + "\n";
  (record.level === "error" ? process.stderr : process.stdout).write(line);
}
