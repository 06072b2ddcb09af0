/**
 * Exporter `webhook`: one POST per work event, the CloudEvent in structured mode
 * (`content-type: application/cloudevents+json`). `Idempotency-Key` carries the event id so a
 * receiver drops redeliveries; with a `secret`, `X-Vigil-Signature: sha256=<hex>` is the
 * HMAC-SHA256 of the exact body bytes, so the receiver can tell the event came from this vigil.
 *
 * An event counts as delivered only on a 2xx whose answer arrived whole. Redirects are never
 * followed (a 3xx is a permanent failure: following one would re-send the event, its signature
 * and the configured headers to another URL); the answer's body is read up to
 * MAX_RESPONSE_BODY_BYTES and no further, within the request `timeout`.
 */
import { createHmac } from 'node:crypto';
import type { ExporterFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { redactText, redactUrl } from '../../internal/redact.ts';
import { isRetryableStatus, parseRetryAfter } from '../../internal/retry.ts';
import { isWorkEntry, type OutboxEntry } from '../../model/work.ts';
import { ExportError, withDelivery } from '../delivery.ts';

export const SIGNATURE_HEADER = 'x-vigil-signature';
export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** The most of an answer's body that is read; a longer answer is not a webhook's and fails the delivery. */
export const MAX_RESPONSE_BODY_BYTES = 64 * 1024;

const schema = withDelivery({
  endpoint: s.url(['http:', 'https:']),
  /** Shared secret for the HMAC-SHA256 signature header; never logged; must not resolve empty. */
  secret: s.secret().optional(),
  /** Extra request headers (for example an API key); values are never logged and must not resolve empty. */
  headers: s.record(s.secret()).default({}),
  timeout: s.duration({ min: 1 }).default(5_000),
});
export type WebhookExporterConfig = Infer<typeof schema>;

export function signBody(secret: string, body: string | Buffer): string {
  return 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
}

/** How reading an answer's body ended. */
type BodyOutcome = { kind: 'whole'; text: string } | { kind: 'too-large' } | { kind: 'cut'; error: unknown };

/** Reads at most `limit` bytes of a body; cancels the rest (closing the connection) instead of buffering it. */
async function readBounded(res: Response, limit: number): Promise<BodyOutcome> {
  if (!res.body) return { kind: 'whole', text: '' };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { kind: 'whole', text: Buffer.concat(chunks).toString('utf8') };
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => undefined);
        return { kind: 'too-large' };
      }
      chunks.push(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    return { kind: 'cut', error };
  }
}

export const webhookExporterFactory: ExporterFactory<WebhookExporterConfig> = {
  type: 'webhook',
  schema,
  create(settings, cfg) {
    const where = redactUrl(cfg.endpoint);
    // fetch refuses credentials in a URL: send them as Basic auth instead.
    const target = new URL(cfg.endpoint);
    const basic =
      target.username || target.password
        ? Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64')
        : undefined;
    target.username = '';
    target.password = '';
    const url = target.toString();
    // Error texts may quote the URL (query tokens, credentials): never let them into logs.
    const hide = (text: string) =>
      redactText(text, [
        { secret: url, shownAs: where },
        { secret: cfg.endpoint, shownAs: where },
      ]);

    async function post(entry: OutboxEntry & { kind: 'work' }): Promise<void> {
      const body = JSON.stringify(entry.event);
      const headers: Record<string, string> = {
        ...cfg.headers,
        'content-type': 'application/cloudevents+json; charset=utf-8',
        [IDEMPOTENCY_HEADER]: entry.event.id,
        'user-agent': 'vigil',
      };
      if (cfg.secret) headers[SIGNATURE_HEADER] = signBody(cfg.secret, body);
      if (basic && !Object.keys(cfg.headers).some((h) => h.toLowerCase() === 'authorization')) headers.authorization = `Basic ${basic}`;
      const fail = (why: string, opts: { reason: string; permanent?: boolean; retryAfterMs?: number; cause?: unknown }) =>
        new ExportError(`${settings.id}: POST ${where} ${hide(why)}`, opts);
      let res: Response;
      try {
        // The timeout covers the answer's body too: a receiver that trickles it is cut off.
        res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(cfg.timeout) });
      } catch (err) {
        const timedOut = (err as Error).name === 'TimeoutError';
        const raw = timedOut ? `timed out after ${cfg.timeout}ms` : (((err as Error).cause as Error)?.message ?? (err as Error).message);
        throw fail(`failed: ${raw}`, { cause: err, reason: timedOut ? 'timeout' : 'connection' });
      }
      const answer = await readBounded(res, MAX_RESPONSE_BODY_BYTES);
      if (res.status >= 300 && res.status < 400) {
        const location = res.headers.get('location');
        throw fail(
          `answered ${res.status} redirecting to ${location ? redactUrl(new URL(location, url).toString()) : '(no location)'}; redirects are not followed: set the endpoint to the final URL`,
          {
            permanent: true,
            reason: 'redirect',
          },
        );
      }
      if (res.ok) {
        if (answer.kind === 'whole') return;
        if (answer.kind === 'too-large') {
          throw fail(`answered ${res.status} with a body over ${MAX_RESPONSE_BODY_BYTES} bytes; not read (is the endpoint a webhook receiver?)`, {
            permanent: true,
            reason: 'response_too_large',
          });
        }
        const why = (answer.error as Error).name === 'TimeoutError' ? `timed out after ${cfg.timeout}ms` : ((answer.error as Error).message ?? String(answer.error));
        // The answer was cut short: the receiving side may not have finished; send again (same Idempotency-Key).
        throw fail(`answered ${res.status} but the answer was cut short (${why}); retrying`, { cause: answer.error, reason: 'response_cut' });
      }
      const retryable = isRetryableStatus(res.status);
      throw fail(`answered ${res.status}${retryable ? '' : ' (permanent)'}`, {
        permanent: !retryable,
        reason: `http_${res.status}`,
        retryAfterMs: retryable ? parseRetryAfter(res.headers.get('retry-after')) : undefined,
      });
    }
    return {
      async start() {},
      async export(entries, progress) {
        for (let i = 0; i < entries.length; i++) {
          const entry = entries[i]!;
          if (!isWorkEntry(entry)) continue;
          try {
            await post(entry);
            // Confirm each accepted event at once: a crash later in the batch must not repeat it.
            await progress?.(i + 1);
          } catch (err) {
            const e = err as ExportError;
            throw new ExportError(e.message, { permanent: e.permanent, retryAfterMs: e.retryAfterMs, delivered: i, failed: 1, cause: e.cause, reason: e.reason });
          }
        }
      },
      async shutdown() {},
    };
  },
};
