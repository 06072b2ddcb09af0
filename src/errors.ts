/**
 * One base error class with stable codes (as undici and fastify do). A code never changes meaning
 * once released; `transient` tells callers whether retrying the same operation can succeed.
 */
export const ERROR_CODES = {
  VIGIL_CONFIG_INVALID: 'The configuration file is not valid; each problem is listed as FILE:LINE:COL: message.',
  VIGIL_CONFIG_NOT_FOUND: 'The configuration file could not be read.',
  VIGIL_LISTEN_FAILED: 'A receiver or extension could not bind its endpoint (in use, or not permitted).',
  VIGIL_PAYLOAD_INVALID: 'A request body or input line could not be decoded; it was refused and nothing from it was kept.',
  VIGIL_PAYLOAD_TOO_LARGE: 'A request body exceeded the configured size limit.',
  VIGIL_UNSUPPORTED_MEDIA_TYPE: 'A request used a content type that the receiver does not accept.',
  VIGIL_UNAUTHORIZED: 'A request lacked the configured bearer token or carried a wrong one.',
  VIGIL_INGEST_BACKPRESSURE: 'The ingest backlog is over its limit; the sender should retry later.',
  VIGIL_STORE_UNAVAILABLE: 'The state store could not be reached or written; the operation can be retried.',
  VIGIL_STORE_CONFLICT: 'A concurrent writer changed the state this commit was based on; the page is processed again.',
  VIGIL_STORE_CORRUPT: 'The state store holds data vigil cannot read.',
  VIGIL_STORE_LOCKED: 'Another vigil process holds the SQLite state file; the message names it.',
  VIGIL_STATE_INVALID: "A component's state write or timer is malformed or over a bound (value size, key length); the message names namespace and key.",
  VIGIL_STATE_FULL: 'A pipeline would hold more pending timers than its bound; the page is retried once timers have fired.',
  VIGIL_CHECKPOINT_INVALID:
    "A retry checkpoint (the watchdog's own, or one an agent runtime sent) has an unknown version, more than 64 attempt counters or cannot be read; the retry is deferred, and the message names the conversation and what to do.",
  VIGIL_EXPORT_FAILED: 'An exporter could not deliver an item; it is retried with backoff.',
  VIGIL_SHUTDOWN: 'The component is shutting down and no longer accepts work.',
} as const;

export type VigilErrorCode = keyof typeof ERROR_CODES;

export class VigilError extends Error {
  readonly code: VigilErrorCode;
  /** True when the same operation may succeed if retried later (store down, backpressure). */
  readonly transient: boolean;

  constructor(code: VigilErrorCode, message: string, options: { transient?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'VigilError';
    this.code = code;
    this.transient = options.transient ?? false;
  }
}

export function isVigilError(err: unknown, code?: VigilErrorCode): err is VigilError {
  return err instanceof VigilError && (code === undefined || err.code === code);
}

/** Message of any thrown value, for logs; never includes a stack. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  // An error that crossed a thread (a worker's `error` event) can arrive as a plain object that
  // kept its message: logged as `[object Object]` otherwise.
  if (typeof err === 'object' && err !== null) {
    const { message, code } = err as { message?: unknown; code?: unknown };
    if (typeof message === 'string') return message;
    // A driver's error class loses its message on the way (better-sqlite3's SqliteError arrives as `{ code }`).
    if (typeof code === 'string') return `an error with code ${code} (its message was lost crossing threads)`;
  }
  return String(err);
}
