/**
 * The last step of a forwarding pipeline: every record that carries its received form becomes a
 * `forward` outbox item, enriched with vigil's diagnosis when the record carried failure
 * evidence. Built into the page's commit, so forwarding is as durable as the work events.
 */
import { map, type OperatorFunction } from 'rxjs';
import { stableHash } from '../../model/identity.ts';
import type { ForwardOutboxItem } from '../../model/work.ts';
import type { Attributes } from '../../model/forward.ts';
import type { PageItem, WorkPage } from '../page.ts';

export function enrichmentOf(item: PageItem): Attributes | undefined {
  const d = item.diagnosis;
  if (!d || d.classification === 'NormalOutput') return undefined;
  const out: Attributes = { 'vigil.classification': d.classification };
  if (d.signature) out['vigil.signature'] = d.signature;
  if (d.fingerprint) out['vigil.fingerprint'] = d.fingerprint;
  const c = item.entry.event.correlation;
  // Evidence of a failure another record counts (DESIGN 3.3): which record.
  if (c && c.counted !== item.entry.event.eventId) out['vigil.evidence_of'] = c.counted;
  if (d.errorKind) out['vigil.error_kind'] = d.errorKind.kind;
  if (item.occurrence) {
    out['vigil.occurrence.id'] = item.occurrence.occurrenceId;
    out['vigil.group.key'] = item.occurrence.groupKey;
    out['vigil.decision'] = item.occurrence.decision;
    if (item.occurrence.workId) out['vigil.work.id'] = item.occurrence.workId;
  }
  return out;
}

export function forwardRecords(): OperatorFunction<WorkPage, WorkPage> {
  return map((page) => {
    const items: ForwardOutboxItem[] = [];
    for (const item of page.items) {
      const rec = item.entry.event.forward;
      if (!rec) continue;
      const enrichment = enrichmentOf(item);
      items.push({
        kind: 'forward',
        id: 'f_' + stableHash(['forward', item.entry.event.eventId]),
        signal: rec.signal,
        record: enrichment ? { ...rec, enrichment } : rec,
      });
    }
    return items.length ? { ...page, commit: { ...page.commit, outbox: [...items, ...page.commit.outbox] } } : page;
  });
}
