/** Exporter `debug`: work events, human-readable, on stdout (logs go to stderr). */
import type { ExporterFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { withDelivery } from '../delivery.ts';
import { isOccurrenceEvent, isWorkEntry, type WorkOutboxItem } from '../../model/work.ts';

const schema = withDelivery({
  /** `basic`: one line per event; `detailed`: the whole CloudEvent as indented JSON. */
  verbosity: s.enumOf(['basic', 'detailed'] as const).default('basic'),
});
export type DebugExporterConfig = Infer<typeof schema>;

export function formatWorkEventLine(e: WorkOutboxItem): string {
  const ev = e.event;
  const type = ev.type.replace('dev.vigil.', '');
  if (!isOccurrenceEvent(ev)) {
    const d = ev.data;
    return `${ev.time} ${type} ${d.category} session=${d.partition} ${d.request_id}: ${d.line ?? d.prompt ?? d.error}`;
  }
  const d = ev.data;
  return `${ev.time} ${type} ${d.decision} count=${d.count} session=${d.partition} ${d.signature ?? '-'} (work ${d.work_id}, group ${d.group_key})`;
}

export const debugExporterFactory: ExporterFactory<DebugExporterConfig> = {
  type: 'debug',
  schema,
  create(_settings, cfg, write: (text: string) => void = (t) => void process.stdout.write(t)) {
    return {
      async start() {},
      async export(entries) {
        const work = entries.filter(isWorkEntry);
        if (work.length === 0) return;
        const text = work.map((e) => (cfg.verbosity === 'detailed' ? JSON.stringify(e.event, null, 2) : formatWorkEventLine(e))).join('\n');
        write(text + '\n');
      },
      async shutdown() {},
    };
  },
};
