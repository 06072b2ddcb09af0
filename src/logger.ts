/**
 * A tiny structured logger (pino's shape: level, msg, fields) writing JSON lines to stderr, so
 * stdout stays free for `vigil classify` output and the debug exporter. Secrets are never passed
 * to it; fields named like secrets are redacted as a second line of defence.
 */
export type Level = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<Level, number> = { debug: 20, info: 30, warn: 40, error: 50 };
const SECRET_KEY = /(token|secret|password|authorization|api[-_]?key)/i;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(bindings: Record<string, unknown>): Logger;
}

export function createLogger(opts: { level?: Level; write?: (line: string) => void; bindings?: Record<string, unknown> } = {}): Logger {
  const min = LEVELS[opts.level ?? ((process.env.VIGIL_LOG_LEVEL as Level) || 'info')] ?? LEVELS.info;
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const bindings = opts.bindings ?? {};
  const log = (level: Level) => (msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[level] < min) return;
    write(JSON.stringify({ time: new Date().toISOString(), level, ...bindings, msg, ...redact(fields) }));
  };
  return {
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    child: (b) => createLogger({ ...opts, bindings: { ...bindings, ...b } }),
  };
}

function redact(fields?: Record<string, unknown>): Record<string, unknown> | undefined {
  if (!fields) return fields;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = SECRET_KEY.test(k) ? '[redacted]' : v;
  return out;
}

/** A logger that records entries, for tests. */
export function memoryLogger(): Logger & { entries: Array<Record<string, unknown>> } {
  const entries: Array<Record<string, unknown>> = [];
  const logger = createLogger({ level: 'debug', write: (line) => entries.push(JSON.parse(line) as Record<string, unknown>) });
  return Object.assign(logger, { entries });
}
