/**
 * Turns forwarded records back into the SDK's ReadableSpan / ReadableLogRecord so the SDK's own
 * OTLP exporters (JSON or protobuf, gzip) send them on unchanged but for vigil's added attributes.
 * Records that share a resource share one Resource object: the SDK's serializers group by it.
 */
import type { Attributes as ApiAttributes, HrTime, SpanContext } from '@opentelemetry/api';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { ForwardRecord } from '../../model/forward.ts';

/** Nanoseconds since the epoch (decimal string) to HrTime, without losing precision. */
export function nanosToHrTime(nanos: string): HrTime {
  if (!/^\d+$/.test(nanos)) return [0, 0];
  const n = BigInt(nanos);
  return [Number(n / 1_000_000_000n), Number(n % 1_000_000_000n)];
}

function hrDuration(start: HrTime, end: HrTime): HrTime {
  let s = end[0] - start[0];
  let ns = end[1] - start[1];
  if (ns < 0) {
    s -= 1;
    ns += 1_000_000_000;
  }
  return s < 0 ? [0, 0] : [s, ns];
}

export class ForwardConverter {
  private readonly resources = new Map<string, Resource>();

  private resource(attrs: Record<string, unknown>): Resource {
    const key = JSON.stringify(attrs);
    let r = this.resources.get(key);
    if (!r) {
      r = resourceFromAttributes(attrs as ApiAttributes);
      if (this.resources.size > 1000) this.resources.clear();
      this.resources.set(key, r);
    }
    return r;
  }

  spans(records: ForwardRecord[]): ReadableSpan[] {
    const out: ReadableSpan[] = [];
    for (const rec of records) {
      if (rec.signal !== 'traces') continue;
      const s = rec.span;
      const startTime = nanosToHrTime(s.startTimeUnixNano);
      const endTime = nanosToHrTime(s.endTimeUnixNano);
      const ctx: SpanContext = { traceId: s.traceId, spanId: s.spanId, traceFlags: 1 };
      out.push({
        name: s.name,
        kind: Math.max(0, s.kind - 1), // OTLP enum (UNSPECIFIED=0, INTERNAL=1) vs API SpanKind (INTERNAL=0)
        spanContext: () => ctx,
        parentSpanContext: s.parentSpanId ? { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: 1 } : undefined,
        startTime,
        endTime,
        status: { code: s.status.code, ...(s.status.message ? { message: s.status.message } : {}) },
        attributes: { ...(s.attributes as ApiAttributes), ...((rec.enrichment ?? {}) as ApiAttributes) },
        links: s.links.map((l) => ({ context: { traceId: l.traceId, spanId: l.spanId, traceFlags: 1 }, attributes: l.attributes as ApiAttributes })),
        events: s.events.map((e) => ({ name: e.name, time: nanosToHrTime(e.timeUnixNano), attributes: e.attributes as ApiAttributes })),
        duration: hrDuration(startTime, endTime),
        ended: true,
        resource: this.resource(rec.resource),
        instrumentationScope: { name: rec.scope.name, ...(rec.scope.version ? { version: rec.scope.version } : {}) },
        droppedAttributesCount: 0,
        droppedEventsCount: 0,
        droppedLinksCount: 0,
      });
    }
    return out;
  }

  logs(records: ForwardRecord[]): ReadableLogRecord[] {
    const out: ReadableLogRecord[] = [];
    for (const rec of records) {
      if (rec.signal !== 'logs') continue;
      const l = rec.log;
      out.push({
        hrTime: nanosToHrTime(l.timeUnixNano),
        hrTimeObserved: nanosToHrTime(l.observedTimeUnixNano || l.timeUnixNano),
        ...(l.traceId && l.spanId ? { spanContext: { traceId: l.traceId, spanId: l.spanId, traceFlags: l.flags & 1 } } : {}),
        ...(l.severityText ? { severityText: l.severityText } : {}),
        ...(l.severityNumber ? { severityNumber: l.severityNumber } : {}),
        ...(l.body !== undefined && l.body !== null ? { body: l.body as ReadableLogRecord['body'] } : {}),
        ...(l.eventName ? { eventName: l.eventName } : {}),
        resource: this.resource(rec.resource),
        instrumentationScope: { name: rec.scope.name, ...(rec.scope.version ? { version: rec.scope.version } : {}) },
        attributes: { ...(l.attributes as ReadableLogRecord['attributes']), ...((rec.enrichment ?? {}) as ReadableLogRecord['attributes']) },
        droppedAttributesCount: 0,
      });
    }
    return out;
  }
}
