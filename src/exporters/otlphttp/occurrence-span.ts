/**
 * Occurrence spans (DESIGN 4.3), made with the OpenTelemetry SDK's tracer. Each work event
 * becomes one `vigil.occurrence` span linked to the causal span. Trace and span ids are derived
 * from the work event's id, so a redelivered event produces the very same span and a backend
 * (or a collector's dedupe) sees it once.
 */
import { SpanKind, SpanStatusCode, type Link } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, type IdGenerator, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { stableHash } from '../../model/identity.ts';
import type { WorkEvent } from '../../model/work.ts';

export const OCCURRENCE_SPAN_NAME = 'vigil.occurrence';

/** Hands out the ids chosen for the next span; the tracer asks for them synchronously in startSpan. */
class PresetIdGenerator implements IdGenerator {
  traceId = '';
  spanId = '';
  generateTraceId(): string {
    return this.traceId;
  }
  generateSpanId(): string {
    return this.spanId;
  }
}

/** Collects ended spans instead of exporting them: delivery is the exporter runner's job. */
class CollectingProcessor implements SpanProcessor {
  ended: ReadableSpan[] = [];
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.ended.push(span);
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

export function occurrenceSpanIds(workEventId: string): { traceId: string; spanId: string } {
  return { traceId: stableHash(['occurrence-trace', workEventId], 32), spanId: stableHash(['occurrence-span', workEventId], 16) };
}

/** `error.type` per the semantic conventions: the exception type a signature names, else `_OTHER`. */
export function errorTypeOf(signature: string | null): string {
  if (!signature) return '_OTHER';
  const head = signature.split(':')[0]!.trim();
  return /^[\w.$]+$/.test(head) && head.length <= 128 ? head : '_OTHER';
}

export class OccurrenceSpanFactory {
  private readonly ids = new PresetIdGenerator();
  private readonly collector = new CollectingProcessor();
  private readonly provider: BasicTracerProvider;

  constructor(resource: Resource) {
    this.provider = new BasicTracerProvider({ resource, idGenerator: this.ids, spanProcessors: [this.collector] });
  }

  spansFor(events: WorkEvent[]): ReadableSpan[] {
    const tracer = this.provider.getTracer('vigil');
    for (const ev of events) {
      const d = ev.data;
      const { traceId, spanId } = occurrenceSpanIds(ev.id);
      this.ids.traceId = traceId;
      this.ids.spanId = spanId;
      const time = Date.parse(ev.time);
      const links: Link[] =
        d.trace_id && d.span_id
          ? [{ context: { traceId: d.trace_id, spanId: d.span_id, traceFlags: 1, isRemote: true }, attributes: { 'vigil.link.type': 'cause' } }]
          : [];
      const span = tracer.startSpan(OCCURRENCE_SPAN_NAME, {
        kind: SpanKind.INTERNAL,
        startTime: time,
        links,
        root: true,
        attributes: {
          'vigil.occurrence.id': d.occurrence_id,
          'vigil.group.key': d.group_key,
          'vigil.work.id': d.work_id,
          'vigil.work.event': ev.type,
          'vigil.work.event_id': ev.id,
          'vigil.decision': d.decision,
          'vigil.classification': d.classification,
          'error.type': errorTypeOf(d.signature),
          'vigil.signature': d.signature ?? '',
          'vigil.fingerprint': d.fingerprint ?? '',
          'vigil.count': d.count,
          'vigil.revision': d.revision,
          'session.id': d.partition,
          ...(d.operation ? { 'vigil.operation': d.operation } : {}),
          'vigil.source': ev.source,
        },
      });
      span.setStatus({ code: SpanStatusCode.ERROR, message: d.signature ?? undefined });
      span.end(time);
    }
    const spans = this.collector.ended;
    this.collector.ended = [];
    return spans;
  }
}
