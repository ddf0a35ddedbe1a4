/**
 * Structured logs: one JSON object per line (`time`, `level`, `event`, then fields), with
 * secrets removed before anything is written: values of keys that name credentials
 * (`apiKey`, `authorization`, `token`...) and the user-info part of URLs.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Receives the server's log events. */
export interface Logger {
  log(level: LogLevel, event: string, fields?: Record<string, unknown>): void;
}

/** Options of {@link createJsonLogger}. */
export interface JsonLoggerOptions {
  /** Where lines go. Default: standard error. */
  write?: (line: string) => void;
  /** Events below this level are dropped. Default `info`. */
  level?: LogLevel;
  /** Fields added to every line (e.g. `{ service: 'dreamgym-serve' }`). */
  base?: Record<string, unknown>;
}

const SECRET_KEY = /api[-_]?key|authorization|token|secret|password|passwd|cookie|credential/i;
const URL_USER_INFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/\s:@]+(?::[^/\s@]*)?@/gi;

/** A copy of `value` with secrets replaced by `[redacted]` (keys naming credentials, URL user-info). */
export function redactSecrets(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.replace(URL_USER_INFO, '$1[redacted]@');
  if (value === null || typeof value !== 'object' || depth > 6) return value;
  if (value instanceof Error) {
    return { name: value.name, message: redactSecrets(value.message, depth + 1) };
  }
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1));
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    result[key] = SECRET_KEY.test(key) ? '[redacted]' : redactSecrets(item, depth + 1);
  }
  return result;
}

/** A logger writing JSON lines, secrets redacted. */
export function createJsonLogger(options: JsonLoggerOptions = {}): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const threshold = LEVELS[options.level ?? 'info'];
  const base = options.base ?? {};
  return {
    log(level, event, fields = {}) {
      if (LEVELS[level] < threshold) return;
      const record = redactSecrets({
        time: new Date().toISOString(),
        level,
        event,
        ...base,
        ...fields,
      });
      write(`${JSON.stringify(record)}\n`);
    },
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = { log() {} };
