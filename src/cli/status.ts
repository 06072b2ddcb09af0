/** `vigil status`: reads the configured store (or, for the in-process memory store, the running vigil's health_check). */
import type { ProcessorStatus, Registry } from '../component.ts';
import type { VigilConfig } from '../config/load.ts';
import { errorMessage } from '../errors.ts';
import { createLogger } from '../logger.ts';
import { processorStatuses } from '../service/service.ts';
import type { StoreStatus } from '../store/types.ts';

export async function printStatus(cfg: VigilConfig, registry: Registry, json: boolean): Promise<number> {
  let status: StoreStatus | undefined;
  let extra: Record<string, unknown> | undefined;
  let processors: Record<string, ProcessorStatus>;
  try {
    if (cfg.state.type === 'memory') {
      const hc = [...cfg.extensions.values()].find((e) => e.type === 'health_check' && cfg.service.extensions.includes(e.id));
      if (!hc) {
        process.stderr.write(
          "vigil status: the memory store lives inside the running vigil; list a health_check extension in service.extensions so status can ask it, or use a durable store\n",
        );
        return 1;
      }
      const endpoint = (hc.config as { endpoint: string }).endpoint;
      const res = await fetch(`http://${endpoint}/status`).catch((err: Error) => {
        throw new Error(`cannot reach the running vigil at ${endpoint} (${err.message}); is it running?`);
      });
      const body = (await res.json()) as Record<string, unknown>;
      status = body.store as StoreStatus;
      processors = (body.processors ?? {}) as Record<string, ProcessorStatus>;
      extra = body;
    } else {
      const store = registry.stores.get(cfg.state.type)!.create({ id: `state/${cfg.state.type}`, logger: createLogger({ level: 'error' }) }, cfg.state.config);
      // Read-only: status may run beside a running vigil (SQLite WAL readers do not block its
      // writer; Redis is only read) and must not create state where there is none.
      await store.open({ readOnly: true });
      try {
        status = await store.status();
        processors = await processorStatuses(cfg, registry, store);
      } finally {
        await store.close();
      }
    }
  } catch (err) {
    process.stderr.write(`vigil status: ${errorMessage(err)}\n`);
    return 1;
  }
  if (json) {
    process.stdout.write(JSON.stringify(extra ?? { ...status, processors }, null, 2) + '\n');
    return 0;
  }
  process.stdout.write(formatStatus(status!, processors));
  return 0;
}

export function formatStatus(st: StoreStatus, processors: Record<string, ProcessorStatus> = {}): string {
  const lines: string[] = [`store: ${st.store}${st.location ? ` at ${st.location}` : ''}`, `groups: ${st.groups}  open work: ${st.openWork}`];
  for (const p of st.pipelines) {
    lines.push(`pipeline ${p.pipeline}:`);
    if (!p.partitions.length) lines.push('  no partitions yet');
    for (const part of p.partitions) lines.push(`  partition ${part.partition}: cursor ${part.cursor ?? '-'}, lag ${part.pending}`);
    for (const e of p.outbox.exporters) lines.push(`  exporter ${e.exporter}: outbox cursor ${e.cursor}, lag ${e.lag}`);
    // Older vigil versions (a health endpoint of a running older vigil) report no timers.
    const t = p.timers ?? { pending: 0, nextDue: null };
    lines.push(`  timers: ${t.pending} pending${t.nextDue !== null ? `, next due ${new Date(t.nextDue).toISOString()}` : ''}`);
  }
  const namespaces = st.state ?? [];
  lines.push(`processor state: ${namespaces.length ? '' : 'none'}`.trimEnd());
  for (const n of namespaces) lines.push(`  ${n.namespace}: ${n.entries} entries${n.evicted ? `, ${n.evicted} evicted at the bound` : ''}`);
  lines.push(`dead letters: ${st.deadLetters.total}`);
  for (const d of st.deadLetters.newest) {
    lines.push(`  ${new Date(d.time).toISOString()} ${d.pipeline}/${d.exporter} ${d.entry.id}: ${d.reason}`);
  }
  lines.push(`recent failures (${st.recentFailures.length}, newest first):`);
  for (const f of st.recentFailures) {
    lines.push(`  ${new Date(f.time).toISOString()} ${f.decision} session=${f.partition} ${f.signature}`);
  }
  // What processors report (the watchdog: provider failures it reported, and its counts).
  for (const [id, p] of Object.entries(processors)) {
    const counts = Object.entries((p.counts ?? {}) as Record<string, number>).map(([k, v]) => `${k} ${v}`);
    const failures = p.failures ?? [];
    lines.push(`${id}: reported failures (${failures.length}, newest first by failure time)${counts.length ? `; runs judged: ${counts.join(', ')}` : ''}`);
    for (const f of failures) lines.push(`  ${f.failed_at} ${typeof f.category === 'string' ? f.category : '-'} ${f.line}`);
  }
  return lines.join('\n') + '\n';
}
