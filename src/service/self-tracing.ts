/**
 * vigil's own traces (optional): a span per committed page and per export attempt, sent over
 * OTLP/HTTP with the SDK's batch processor. Without an endpoint the API's no-op tracer is used,
 * which costs nothing.
 */
import { trace, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter as TracesJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as TracesProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

export interface SelfTracing {
  tracer: Tracer;
  shutdown(): Promise<void>;
}

export function createSelfTracing(cfg: { endpoint: string | undefined; encoding: 'proto' | 'json'; headers: Record<string, string> }): SelfTracing {
  if (!cfg.endpoint) return { tracer: trace.getTracer('vigil-noop'), shutdown: async () => undefined };
  const url = `${cfg.endpoint.replace(/\/+$/, '')}/v1/traces`;
  const exporter = cfg.encoding === 'json' ? new TracesJson({ url, headers: cfg.headers }) : new TracesProto({ url, headers: cfg.headers });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'vigil' }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  return { tracer: provider.getTracer('vigil'), shutdown: () => provider.shutdown() };
}
