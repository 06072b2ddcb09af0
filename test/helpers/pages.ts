import type { AgentEvent, Diagnosis } from '../../src/model/event.ts';
import type { GroupState } from '../../src/model/work.ts';
import { newWorkPage, type WorkPage } from '../../src/processors/page.ts';
import type { PageCommit } from '../../src/store/types.ts';

let seq = 0;

export interface FailureSpec {
  id?: string;
  time: number;
  signature?: string;
  partition?: string;
  service?: string;
  turnId?: string;
  kind?: string;
  executionId?: string;
  payload?: Record<string, unknown>;
  revision?: string;
  /** No diagnosis of a failure: a normal output. */
  normal?: boolean;
}

export function event(spec: FailureSpec): AgentEvent {
  const e: AgentEvent = {
    eventId: spec.id ?? `ev-${++seq}`,
    kind: spec.kind ?? 'execution.completed',
    payload: spec.payload ?? { state: 'error' },
    partition: spec.partition ?? 'session-1',
    time: spec.time,
    service: spec.service ?? 'agent',
    source: 'jsonl',
  };
  if (spec.turnId) e.turnId = spec.turnId;
  if (spec.executionId) e.executionId = spec.executionId;
  if (spec.revision) e.revision = spec.revision;
  return e;
}

/** A page whose items already carry a diagnosis, as the classify processor would leave them. */
export function diagnosedPage(specs: FailureSpec[], partition = 'session-1', pipeline = 'logs'): WorkPage {
  const page = newWorkPage(
    pipeline,
    partition,
    specs.map((spec) => ({ id: String(++seq), event: event({ partition, ...spec }) })),
  );
  page.items = page.items.map((item, i) => {
    const spec = specs[i]!;
    if (spec.kind === 'execution.started') return item;
    const diagnosis: Diagnosis = spec.normal
      ? { classification: 'NormalOutput', signature: null, fingerprint: null }
      : { classification: 'ExecutionFailure', signature: spec.signature ?? 'ZeroDivisionError: division by zero', fingerprint: `fp:${spec.signature ?? 'zde'}` };
    return { ...item, diagnosis };
  });
  return page;
}

/** A state view over plain maps, with `apply` standing in for the store's commit. */
export function mapState() {
  const groups = new Map<string, GroupState>();
  const turns = new Map<string, number>();
  const revisions = new Map<string, string>();
  return {
    groups,
    turns,
    revisions,
    apply(c: PageCommit) {
      for (const g of c.groups) groups.set(g.groupKey, g);
      for (const t of c.turns) turns.set(t.turnId, (turns.get(t.turnId) ?? 0) + t.created);
      for (const r of c.revisions) revisions.set(r.executionId, r.revision);
    },
    pick<V>(m: Map<string, V>, keys: readonly string[]) {
      return new Map(keys.filter((k) => m.has(k)).map((k) => [k, m.get(k)!] as const));
    },
  };
}

/** A group state at `version` (its count and last sighting too), with an open work item or none: the SQLite log tests' groups. */
export function group(key: string, version: number, open: boolean): GroupState {
  return {
    groupKey: key,
    count: version,
    firstSeen: 0,
    lastSeen: version,
    lastDecision: 'BurstThresholdReached',
    openWorkId: open ? `w-${key}` : null,
    workGeneration: 0,
    version,
  };
}
