/**
 * For pipelines with an exporter that consumes every occurrence (its factory declares
 * `everyOccurrence`, as otlphttp does with `occurrence_spans: all`): each
 * occurrence the recurrence processor counted becomes an `occurrence` outbox item in the page's
 * commit, whether or not it created or updated work.
 */
import { map, type OperatorFunction } from 'rxjs';
import type { OccurrenceOutboxItem } from '../../model/work.ts';
import type { WorkPage } from '../page.ts';
import { errorKindFields } from '../recurrence/operator.ts';

export function occurrenceRecords(): OperatorFunction<WorkPage, WorkPage> {
  return map((page) => {
    const items: OccurrenceOutboxItem[] = [];
    for (const item of page.items) {
      const o = item.occurrence;
      const d = item.diagnosis;
      if (!o || !d || o.decision === 'Reject') continue;
      const e = item.entry.event;
      items.push({
        kind: 'occurrence',
        id: o.occurrenceId,
        occurrence: {
          occurrence_id: o.occurrenceId,
          group_key: o.groupKey,
          work_id: o.workId,
          decision: o.decision,
          classification: d.classification,
          signature: d.signature,
          fingerprint: d.fingerprint,
          count: o.count,
          time: new Date(e.time).toISOString(),
          service: e.service,
          partition: e.partition,
          revision: o.revision,
          operation: o.operation ?? e.operation ?? null,
          trace_id: e.traceId ?? null,
          span_id: e.spanId ?? null,
          suppressed: o.suppressed ?? null,
          ...errorKindFields(d),
        },
      });
    }
    return items.length ? { ...page, commit: { ...page.commit, outbox: [...page.commit.outbox, ...items] } } : page;
  });
}
