/**
 * Exporter `webhook`: one POST per work event, the CloudEvent in structured mode
 * (`content-type: application/cloudevents+json`). `Idempotency-Key` carries the event id so a
 * receiver drops redeliveries; with a `secret`, `X-Vigil-Signature: sha256=<hex>` is the
 * HMAC-SHA256 of the exact body bytes, so the receiver can tell the event came from this vigil.
 */
import { createHmac } from 'node:crypto';
import type { ExporterFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { isWorkEntry, type OutboxEntry } from '../../model/work.ts';
import { ExportError, isRetryableStatus, parseRetryAfter, withDelivery } from '../delivery.ts';
import { redactUrl } from '../redact.ts';

export const SIGNATURE_HEADER = 'x-vigil-signature';
export const IDEMPOTENCY_HEADER = 'idempotency-key';

const schema = withDelivery({
  endpoint: s.url(['http:', 'https:']),
  /** Shared secret for the HMAC-SHA256 signature header; never logged. */
  secret: s.string({ minLength: 1 }).optional(),
  /** Extra request headers (for example an API key); values are never logged. */
  headers: s.record(s.string()).default({}),
  timeout: s.duration({ min: 1 }).default(5_000),
});
export type WebhookExporterConfig = Infer<typeof schema>;

export function signBody(secret: string, body: string | Buffer): string {
  return 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
}

export const webhookExporterFactory: ExporterFactory<WebhookExporterConfig> = {
  type: 'webhook',
  schema,
  create(settings, cfg) {
    const where = redactUrl(cfg.endpoint);
    // fetch refuses credentials in a URL: send them as Basic auth instead.
    const target = new URL(cfg.endpoint);
    const basic = target.username || target.password ? Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64') : undefined;
    target.username = '';
    target.password = '';
    const url = target.toString();
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
      let res: Response;
      try {
        res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(cfg.timeout) });
      } catch (err) {
        const raw = (err as Error).name === 'TimeoutError' ? `timed out after ${cfg.timeout}ms` : (((err as Error).cause as Error)?.message ?? (err as Error).message);
        // Error texts may quote the URL (query tokens): never let them into logs.
        const why = raw.split(url).join(where).split(cfg.endpoint).join(where);
        throw new ExportError(`${settings.id}: POST ${where} failed: ${why}`, { cause: err });
      }
      // Read and discard the body so the connection can be reused.
      await res.arrayBuffer().catch(() => undefined);
      if (res.ok) return;
      throw new ExportError(`${settings.id}: POST ${where} answered ${res.status}`, {
        permanent: !isRetryableStatus(res.status),
        retryAfterMs: parseRetryAfter(res.headers.get('retry-after')),
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
            throw new ExportError(e.message, { permanent: e.permanent, retryAfterMs: e.retryAfterMs, delivered: i, failed: 1, cause: e.cause });
          }
        }
      },
      async shutdown() {},
    };
  },
};
