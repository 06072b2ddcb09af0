/**
 * When an HTTP delivery is worth retrying, and after how long: the OTLP exporter rules
 * (OTLP specification, "Failures" and "Throttling"), used by every exporter that speaks HTTP.
 */

/**
 * Statuses that say "try again later": 429 Too Many Requests, 502 Bad Gateway, 503 Service
 * Unavailable and 504 Gateway Timeout (the OTLP list), plus 408 Request Timeout. Every other 4xx
 * and 5xx is permanent — the same request will fail the same way — and so is a 3xx, which vigil
 * never follows.
 */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 429, 502, 503, 504]);

export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUSES.has(status);
}

/**
 * The longest `Retry-After` vigil honours: a longer one (`Retry-After: 3000000`, a date next year)
 * waits this long. The exporter runner further caps it by what is left of `max_elapsed_time`.
 */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

/**
 * `Retry-After` (RFC 9110 §10.2.3: delay-seconds, or an HTTP date) in milliseconds from `now`,
 * at most MAX_RETRY_AFTER_MS; undefined when absent or unreadable (`-5`, `soon`). A date in the
 * past is 0.
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(v)) ms = Number(v) * 1000;
  else {
    // Only the HTTP-date shapes (IMF-fixdate and the obsolete forms all name a weekday or month).
    if (!/[a-z]/i.test(v)) return undefined;
    const date = Date.parse(v);
    if (Number.isNaN(date)) return undefined;
    ms = date - now;
  }
  if (!Number.isFinite(ms)) return MAX_RETRY_AFTER_MS;
  return Math.round(Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms)));
}
