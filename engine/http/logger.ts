// The process's one log, made at start and lent to the parts made before the app. JSON lines for log collectors,
// unless stdout is a terminal, where an operator reads one plain line per entry.
import { type Logger, pino } from 'pino';
import { requestSerializer } from './access-log.ts';

/** Key material never reaches the log, whatever logs a request's headers. */
const REDACT = ['req.headers.authorization', 'req.headers["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]'];

/** What a caller may ask of the log: pino options (a `stream` to capture it), or false for none. */
export type LoggerChoice = boolean | { level?: string; stream?: { write(line: string): void } };

/**
 * The log at LOG_LEVEL's `level` with the redaction list, then the caller's own options; false: a silent one.
 * Written to the caller's stream, else pretty when stdout is a terminal (`tty`), else JSON on stdout.
 */
export function gatewayLogger(level: string, choice: LoggerChoice | undefined, tty = process.stdout.isTTY === true): Logger {
  if (choice === false) return pino({ level: 'silent' });
  const { stream, ...own } = typeof choice === 'object' ? choice : {};
  const options = { level, redact: REDACT, serializers: { req: requestSerializer }, ...own };
  if (stream) return pino(options, stream);
  return tty ? pino(options, prettyTo(process.stdout)) : pino(options);
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** ANSI colours of the levels from warn up, so problems stand out on a terminal. */
const LEVEL_COLOURS: Record<number, string> = { 40: '\x1b[33m', 50: '\x1b[31m', 60: '\x1b[31m' };
/** pino's own fields, shown in the line's head rather than among the fields. */
const HEAD = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

/** A destination that turns each JSON line pino writes into one readable line. */
function prettyTo(out: { write(text: string): unknown }): { write(line: string): void } {
  return { write: (line) => void out.write(`${prettyLine(line)}\n`) };
}

/** `12:03:04.567 INFO  message  key=value …` (local time); a line that is not JSON is kept as it came. */
function prettyLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.trimEnd();
  }
  const level = Number(entry.level);
  const name = (LEVEL_NAMES[level] ?? String(entry.level)).padEnd(5);
  const time = typeof entry.time === 'number' ? new Date(entry.time).toTimeString().slice(0, 8) : '';
  const ms = typeof entry.time === 'number' ? `.${String(entry.time % 1000).padStart(3, '0')}` : '';
  const fields = Object.entries(entry)
    .filter(([k]) => !HEAD.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  const colour = LEVEL_COLOURS[level];
  const head = colour ? `${colour}${name}\x1b[0m` : name;
  // An error's stack reads best as the lines it is made of, below its entry.
  const err = entry.err as { stack?: unknown } | undefined;
  const stack = typeof err?.stack === 'string' ? `\n${err.stack}` : '';
  return `${[`${time}${ms} ${head} ${entry.msg ?? ''}`, ...fields].join('  ')}${stack}`;
}
