/**
 * Exporter `otlphttp`: occurrence spans for every work event (DESIGN 4.3) and, with
 * `forward: true`, the received traces and logs themselves, enriched with vigil's diagnosis —
 * sent with the OpenTelemetry SDK's OTLP/HTTP exporters (JSON or protobuf, gzip, headers for
 * vendor API keys). A batch counts as delivered only when the downstream accepted it.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPLogExporter as LogsJson } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as LogsProto } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPTraceExporter as TracesJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as TracesProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { ExporterFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import type { ForwardRecord } from '../../model/forward.ts';
import { redactUrl } from '../../internal/redact.ts';
import { isRetryableStatus } from '../../internal/retry.ts';
import { isOccurrenceEvent, type OutboxEntry } from '../../model/work.ts';
import { ExportError, withDelivery } from '../delivery.ts';
import { ForwardConverter } from './forward.ts';
import { OccurrenceSpanFactory, spanInputOfOccurrence, spanInputOfWorkEvent } from './occurrence-span.ts';

const schema = withDelivery({
  /** Base URL; `/v1/traces` and `/v1/logs` are appended (as the Collector's otlphttp exporter does). */
  endpoint: s.url(['http:', 'https:']),
  /** Request headers, e.g. a vendor API key; values are never logged and must not resolve empty. */
  headers: s.record(s.secret()).default({}),
  compression: s.enumOf(['gzip', 'none'] as const).default('gzip'),
  encoding: s.enumOf(['proto', 'json'] as const).default('proto'),
  timeout: s.duration({ min: 1 }).default(10_000),
  /** Also send on the received traces and logs, with vigil.* attributes on those that carried failure evidence. */
  forward: s.boolean().default(false),
  /** `work`: one span per work event (created/updated); `all`: one span per counted occurrence. */
  occurrence_spans: s.enumOf(['work', 'all'] as const).default('work'),
});
export type OtlpHttpExporterConfig = Infer<typeof schema>;

interface SdkExporter<T> {
  export(items: T[], done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
}

export const otlpHttpExporterFactory: ExporterFactory<OtlpHttpExporterConfig> = {
  type: 'otlphttp',
  schema,
  capabilities: (cfg) => ({ forwardedRecords: cfg.forward, everyOccurrence: cfg.occurrence_spans === 'all' }),
  create(settings, cfg) {
    const base = cfg.endpoint.replace(/\/+$/, '');
    const common = { headers: cfg.headers, compression: cfg.compression as never, timeoutMillis: cfg.timeout };
    const traces: SdkExporter<ReadableSpan> =
      cfg.encoding === 'json' ? new TracesJson({ ...common, url: `${base}/v1/traces` }) : new TracesProto({ ...common, url: `${base}/v1/traces` });
    const logs: SdkExporter<ReadableLogRecord> =
      cfg.encoding === 'json' ? new LogsJson({ ...common, url: `${base}/v1/logs` }) : new LogsProto({ ...common, url: `${base}/v1/logs` });
    const occurrences = new OccurrenceSpanFactory(resourceFromAttributes({ 'service.name': 'vigil' }));
    const converter = new ForwardConverter();
    const where = redactUrl(base);

    function send<T>(exporter: SdkExporter<T>, items: T[], what: string): Promise<void> {
      if (items.length === 0) return Promise.resolve();
      return new Promise((resolve, reject) => {
        exporter.export(items, (result) => {
          if (result.code === ExportResultCode.SUCCESS) return resolve();
          const err = result.error as (Error & { code?: number }) | undefined;
          const status = typeof err?.code === 'number' ? err.code : undefined;
          reject(
            new ExportError(`${settings.id}: sending ${items.length} ${what} to ${where} failed: ${status ? `HTTP ${status}` : (err?.message ?? 'unknown error')}`, {
              // An HTTP status the OTLP rules do not retry (a 3xx the SDK does not follow, 400, 500, ...) is permanent.
              permanent: status !== undefined && !isRetryableStatus(status),
              reason: status !== undefined ? `http_${status}` : 'connection',
              cause: err,
            }),
          );
        });
      });
    }

    return {
      async start() {},
      async export(entries: OutboxEntry[]) {
        const spans: ReadableSpan[] = occurrences.spansFor(
          entries.flatMap((e) =>
            cfg.occurrence_spans === 'all'
              ? e.kind === 'occurrence'
                ? [spanInputOfOccurrence(e.occurrence)]
                : []
              : e.kind === 'work' && isOccurrenceEvent(e.event)
                ? [spanInputOfWorkEvent(e.event)]
                : [],
          ),
        );
        const forwarded = cfg.forward ? entries.flatMap((e) => (e.kind === 'forward' ? [e.record as ForwardRecord] : [])) : [];
        spans.push(...converter.spans(forwarded));
        // Traces and logs go in two requests; a batch is confirmed only when both were accepted
        // (a resend after a partial failure repeats ids the downstream can drop).
        await send(traces, spans, 'spans');
        await send(logs, converter.logs(forwarded), 'log records');
      },
      async shutdown() {
        await Promise.allSettled([traces.shutdown(), logs.shutdown()]);
      },
    };
  },
};
