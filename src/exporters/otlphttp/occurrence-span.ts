/**
 * Occurrence spans (DESIGN 4.3), made with the OpenTelemetry SDK's tracer: one `vigil.occurrence`
 * span per work event (or, with `occurrence_spans: all`, per counted occurrence), linked to the
 * causal span. Trace and span ids are derived from the work event's (or occurrence's) id, so a
 * redelivered item produces the very same span and a backend (or a collector's dedupe) sees it once.
 */
import { SpanKind, SpanStatusCode, type Link } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, type IdGenerator, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { stableHash } from '../../model/identity.ts';
import type { CloudEvent, OccurrenceEventType, OccurrenceRecord, WorkEventData } from '../../model/work.ts';

type OccurrenceWorkEvent = CloudEvent<OccurrenceEventType, WorkEventData>;

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

/** What one occurrence span says, from a work event or an occurrence record. */
export interface OccurrenceSpanInput {
  /** Seed of the span's ids: the work event id or the occurrence id. */
  idSeed: string;
  time: number;
  cause: { traceId: string; spanId: string } | undefined;
  signature: string | null;
  attributes: Record<string, string | number>;
}

/** A work event's span: its occurrence, plus which work event it is; ids from the event id. */
export function spanInputOfWorkEvent(ev: OccurrenceWorkEvent): OccurrenceSpanInput {
  const d = ev.data;
  const input = spanInputOfOccurrence({
    occurrence_id: d.occurrence_id,
    group_key: d.group_key,
    work_id: d.work_id,
    decision: d.decision,
    classification: d.classification,
    signature: d.signature,
    fingerprint: d.fingerprint,
    count: d.count,
    time: ev.time,
    service: ev.source.replace(/^vigil\//, ''),
    partition: d.partition,
    revision: d.revision,
    operation: d.operation,
    trace_id: d.trace_id,
    span_id: d.span_id,
    suppressed: null,
    ...(d.error_kind !== undefined ? { error_kind: d.error_kind } : {}),
    ...(d.severity !== undefined ? { severity: d.severity } : {}),
    ...(d.detected_by !== undefined ? { detected_by: d.detected_by } : {}),
  });
  return { ...input, idSeed: ev.id, attributes: { ...input.attributes, 'vigil.work.event': ev.type, 'vigil.work.event_id': ev.id } };
}

export function spanInputOfOccurrence(o: OccurrenceRecord): OccurrenceSpanInput {
  return {
    idSeed: o.occurrence_id,
    time: Date.parse(o.time),
    cause: o.trace_id && o.span_id ? { traceId: o.trace_id, spanId: o.span_id } : undefined,
    signature: o.signature,
    attributes: {
      'vigil.occurrence.id': o.occurrence_id,
      'vigil.group.key': o.group_key,
      ...(o.work_id ? { 'vigil.work.id': o.work_id } : {}),
      'vigil.decision': o.decision,
      'vigil.classification': o.classification,
      'error.type': errorTypeOf(o.signature),
      'vigil.signature': o.signature ?? '',
      'vigil.fingerprint': o.fingerprint ?? '',
      'vigil.count': o.count,
      'vigil.revision': o.revision,
      'session.id': o.partition,
      ...(o.operation ? { 'vigil.operation': o.operation } : {}),
      ...(o.suppressed ? { 'vigil.suppressed': o.suppressed } : {}),
      ...(o.error_kind !== undefined ? { 'vigil.error_kind': o.error_kind } : {}),
      ...(o.severity !== undefined ? { 'vigil.severity': o.severity } : {}),
      ...(o.detected_by ? { 'vigil.detected_by': o.detected_by } : {}),
      'vigil.source': `vigil/${o.service}`,
    },
  };
}

export class OccurrenceSpanFactory {
  private readonly ids = new PresetIdGenerator();
  private readonly collector = new CollectingProcessor();
  private readonly provider: BasicTracerProvider;

  constructor(resource: Resource) {
    this.provider = new BasicTracerProvider({ resource, idGenerator: this.ids, spanProcessors: [this.collector] });
  }

  spansFor(inputs: OccurrenceSpanInput[]): ReadableSpan[] {
    const tracer = this.provider.getTracer('vigil');
    for (const input of inputs) {
      const { traceId, spanId } = occurrenceSpanIds(input.idSeed);
      this.ids.traceId = traceId;
      this.ids.spanId = spanId;
      const links: Link[] = input.cause
        ? [{ context: { traceId: input.cause.traceId, spanId: input.cause.spanId, traceFlags: 1, isRemote: true }, attributes: { 'vigil.link.type': 'cause' } }]
        : [];
      const span = tracer.startSpan(OCCURRENCE_SPAN_NAME, { kind: SpanKind.INTERNAL, startTime: input.time, links, root: true, attributes: input.attributes });
      span.setStatus({ code: SpanStatusCode.ERROR, message: input.signature ?? undefined });
      span.end(input.time);
    }
    const spans = this.collector.ended;
    this.collector.ended = [];
    return spans;
  }
}
