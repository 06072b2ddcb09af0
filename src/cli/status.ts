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
          'vigil status: the memory store lives inside the running vigil; list a health_check extension in service.extensions so status can ask it, or use a durable store\n',
        );
        return 1;
      }
      const { endpoint, auth } = hc.config as { endpoint: string; auth?: { bearer_token: string } };
      // /status takes the extension's own token, else a receiver's: send the one this config names.
      const receiverTokens = [...cfg.receivers.values()].flatMap((c) => [...(registry.receivers.get(c.type)?.bearerTokens?.(c.config) ?? [])]);
      const token = auth?.bearer_token ?? receiverTokens[0];
      const res = await fetch(`http://${endpoint}/status`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
        signal: AbortSignal.timeout(10_000),
      }).catch((err: Error) => {
        throw new Error(`cannot reach the running vigil at ${endpoint} (${err.message}); is it running?`);
      });
      if (!res.ok)
        throw new Error(
          `the running vigil at ${endpoint} answered ${res.status} to GET /status${res.status === 401 ? " (its token differs from this config's)" : ''}`,
        );
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
    process.stdout.write(terminalJson(extra ?? { ...status, processors }) + '\n');
    return 0;
  }
  process.stdout.write(formatStatus(status!, processors));
  return 0;
}

/**
 * The status as text for a terminal. Session ids, signatures and reasons come from the agents'
 * records, so every value is made printable: control characters (an escape sequence that clears
 * the screen, a newline that forges a line) and bidirectional overrides are shown escaped.
 */
export function formatStatus(st: StoreStatus, processors: Record<string, ProcessorStatus> = {}): string {
  const p_ = printable;
  const lines: string[] = [`store: ${p_(st.store)}${st.location ? ` at ${p_(st.location)}` : ''}`, `groups: ${st.groups}  open work: ${st.openWork}`];
  for (const p of st.pipelines) {
    lines.push(`pipeline ${p_(p.pipeline)}:`);
    if (!p.partitions.length) lines.push('  no partitions yet');
    for (const part of p.partitions) lines.push(`  partition ${p_(part.partition)}: cursor ${p_(part.cursor ?? '-')}, lag ${part.pending}`);
    for (const e of p.outbox.exporters) lines.push(`  exporter ${p_(e.exporter)}: outbox cursor ${e.cursor}, lag ${e.lag}`);
    // Older vigil versions (a health endpoint of a running older vigil) report no timers.
    const t = p.timers ?? { pending: 0, nextDue: null };
    lines.push(`  timers: ${t.pending} pending${t.nextDue !== null ? `, next due ${isoTime(t.nextDue)}` : ''}`);
  }
  const namespaces = st.state ?? [];
  lines.push(`processor state: ${namespaces.length ? '' : 'none'}`.trimEnd());
  for (const n of namespaces) lines.push(`  ${p_(n.namespace)}: ${n.entries} entries${n.evicted ? `, ${n.evicted} evicted at the bound` : ''}`);
  lines.push(`dead letters: ${st.deadLetters.total}`);
  for (const d of st.deadLetters.newest) {
    lines.push(`  ${isoTime(d.time)} ${p_(d.pipeline)}/${p_(d.exporter)} ${p_(d.entry.id)}: ${p_(d.reason)}`);
  }
  lines.push(`recent failures (${st.recentFailures.length}, newest first):`);
  for (const f of st.recentFailures) {
    lines.push(`  ${isoTime(f.time)} ${p_(f.decision)} session=${p_(f.partition)} ${p_(f.signature)}`);
  }
  // What processors report (the watchdog: provider failures it reported, and its counts).
  for (const [id, p] of Object.entries(processors)) {
    const counts = Object.entries((p.counts ?? {}) as Record<string, number>).map(([k, v]) => `${k} ${v}`);
    const failures = p.failures ?? [];
    lines.push(`${p_(id)}: reported failures (${failures.length}, newest first by failure time)${counts.length ? `; runs judged: ${p_(counts.join(', '))}` : ''}`);
    for (const f of failures) lines.push(`  ${p_(f.failed_at)} ${typeof f.category === 'string' ? p_(f.category) : '-'} ${p_(f.line)}`);
  }
  return lines.join('\n') + '\n';
}

/** DEL, C1 controls and the Unicode bidi controls that reorder what a terminal shows (a class body). */
const C1_AND_BIDI = '\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';
/** Those and the C0 controls. */
const UNPRINTABLE = new RegExp(`[\\u0000-\\u001f${C1_AND_BIDI}]`, 'g');

/** `text` with every unprintable character shown as an escape (`\x1b`, `\n`, `\u202e`). */
export function printable(text: unknown): string {
  const s = typeof text === 'string' ? text : String(text);
  return s.replace(UNPRINTABLE, (c) => {
    const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    const code = c.charCodeAt(0);
    return named[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
  });
}

/** Characters JSON.stringify leaves raw that still reorder or break what a terminal shows. */
const RAW_IN_JSON = new RegExp(`[${C1_AND_BIDI}]`, 'g');

/**
 * `value` as indented JSON that is safe to print: JSON.stringify already escapes C0 controls, and
 * the rest of UNPRINTABLE is written as `\uXXXX` escapes, so the text parses to the same value
 * while a crafted session id cannot reorder the lines a person reads (`vigil status --json | less`).
 */
export function terminalJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function isoTime(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
}
