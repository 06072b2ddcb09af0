/**
 * The failure path's work done another way (round 7), checked against the way it was done before:
 * - work events are built as literals with their optional keys added in place (user, related
 *   evidence, error kind), not spread in: the same JSON, key order included, as the spread-built
 *   event, for random records (seeded; `VIGIL_TEST_SEED` replays);
 * - the work events' `source` is reused from the last service seen: right when services alternate;
 * - Python's innermost in-app frames are taken in one pass (random frame lists, recursions);
 * - the memory store copies group states field by field, and outbox entries by literal where they
 *   hold just the usual keys (then the same own keys, values and order as the spread copies);
 *   stored group states are frozen copies, handed out as they are.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { lastValueFrom, of } from 'rxjs';
import type { AgentEvent, Diagnosis, RelatedRecord } from '../src/model/event.ts';
import { isoTime } from '../src/internal/iso-time.ts';
import { workEventId } from '../src/model/identity.ts';
import { ERROR_KINDS } from '../src/model/runtime-error.ts';
import { isOccurrenceEvent, type Decision, type GroupState, type OutboxItem, type WorkEventData } from '../src/model/work.ts';
import { newWorkPage, type Occurrence, type PageItem } from '../src/processors/page.ts';
import { recurrence, type RecurrenceOptions } from '../src/processors/recurrence/operator.ts';
import { collapseFrames, MAX_FRAMES } from '../src/processors/classify/finding.ts';
import { innermostInApp } from '../src/processors/classify/formats/python.ts';
import { copyGroup, MemoryStore, withSeq } from '../src/store/memory.ts';
import { mapState } from './helpers/pages.ts';
import { checkProperty, seededRandom } from './helpers/random.ts';

/** The work event as the recurrence processor built it before round 7 (spreads), from what it was built of. */
function referenceWorkEvent(
  type: string,
  item: PageItem,
  o: Occurrence,
  group: { workId: string; count: number; firstSeen: number; lastSeen: number },
  decision: Decision,
) {
  const event = item.entry.event;
  const d = item.diagnosis!;
  const id = workEventId(type, group.workId, o.occurrenceId);
  const time = isoTime(event.time);
  const related = event.correlation?.related;
  const k = d.errorKind;
  return {
    kind: 'work',
    id,
    event: {
      specversion: '1.0',
      id,
      source: `vigil/${event.service}`,
      type,
      time,
      subject: o.groupKey,
      datacontenttype: 'application/json',
      data: {
        work_id: group.workId,
        group_key: o.groupKey,
        occurrence_id: o.occurrenceId,
        classification: d.classification,
        decision,
        signature: d.signature,
        fingerprint: d.fingerprint,
        count: group.count,
        first_seen: group.firstSeen === event.time ? time : isoTime(group.firstSeen),
        last_seen: group.lastSeen === event.time ? time : isoTime(group.lastSeen),
        partition: event.partition,
        revision: o.revision,
        operation: o.operation ?? null,
        trace_id: event.traceId ?? null,
        span_id: event.spanId ?? null,
        ...(event.user !== undefined ? { user: event.user } : {}),
        evidence: {
          kind: event.kind,
          source: event.source,
          event_id: event.eventId,
          excerpt: d.excerpt ? d.excerpt.slice(0, 2000) : null,
          ...(related?.length
            ? {
                related: related.map((r) => ({
                  event_id: r.eventId,
                  source: r.source,
                  kind: r.kind ?? null,
                  span_id: r.spanId ?? null,
                  excerpt: r.excerpt ?? null,
                })),
              }
            : {}),
        },
        ...(k ? { error_kind: k.kind, severity: k.severity, detected_by: k.detectedBy } : {}),
      },
    },
  };
}

const opts: RecurrenceOptions = { minRecurrence: 1, groupingWindow: 60_000, maxPerTurn: 1000, scope: 'service' };

test('work events built without spreads are the JSON the spread-built ones were, key order included (random records)', async () => {
  const rnd = seededRandom(7001);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const maybe = <T>(v: T): T | undefined => (rnd() < 0.5 ? v : undefined);
  const state = mapState();
  const operator = recurrence(opts, {
    loadGroups: (keys) => of(state.pick(state.groups, keys)),
    loadTurns: (_p, ids) => of(state.pick(state.turns, ids)),
    lookupRevisions: (ids) => of(state.pick(state.revisions, ids)),
  });
  let seq = 0;
  let checked = 0;
  let updates = 0;
  const seenShapes = new Set<string>();
  for (let pageNo = 0; pageNo < 40; pageNo++) {
    const partition = `session-${pageNo % 3}`;
    const entries = [];
    const diagnoses: Diagnosis[] = [];
    for (let i = 0; i < 20; i++) {
      seq++;
      const e: AgentEvent = {
        eventId: `ev-${seq}`,
        kind: pick(['execution.completed', 'tool.failed']),
        payload: { state: 'error' },
        partition,
        time: 1_700_000_000_000 + seq * pick([10, 1000, 90_000]),
        service: pick(['svc-a', 'svc-b', 'svc-c']),
        source: pick(['jsonl', 'otlp.logs'] as const),
      };
      const user = maybe(pick(['u1', 'u2']));
      if (user !== undefined) e.user = user;
      const traceId = maybe('t'.repeat(32));
      if (traceId) e.traceId = traceId;
      const spanId = maybe('s'.repeat(16));
      if (spanId) e.spanId = spanId;
      const operation = maybe(pick(['op.a', 'op.b']));
      if (operation) e.operation = operation;
      if (rnd() < 0.4) {
        const related: RelatedRecord[] = [];
        const n = Math.floor(rnd() * 3);
        for (let r = 0; r < n; r++) {
          const rec: RelatedRecord = { eventId: `rel-${seq}-${r}`, source: 'otlp.logs' };
          const kind = maybe('execution.completed');
          if (kind) rec.kind = kind;
          const sid = maybe('r'.repeat(16));
          if (sid) rec.spanId = sid;
          const ex = maybe(`excerpt ${r}`);
          if (ex) rec.excerpt = ex;
          related.push(rec);
        }
        e.correlation = { anchor: e.eventId, counted: e.eventId, related };
      }
      entries.push({ id: String(seq), event: e });
      const signature = `E${Math.floor(rnd() * 6)}: boom`;
      const d: Diagnosis = { classification: 'ExecutionFailure', signature, fingerprint: `fp:${signature}` };
      const excerpt = maybe(rnd() < 0.2 ? 'x'.repeat(2100) : 'Traceback …');
      if (excerpt) d.excerpt = excerpt;
      if (rnd() < 0.3) d.errorKind = { kind: pick(ERROR_KINDS), severity: pick([3, 'error']), detectedBy: 'vigil/detect', origin: 'detected' };
      diagnoses.push(d);
    }
    const page = newWorkPage('logs', partition, entries);
    page.items = page.items.map((item, i) => ({ entry: item.entry, diagnosis: diagnoses[i]! }));
    const out = await lastValueFrom(of(page).pipe(operator));
    state.apply(out.commit);
    for (const o of out.commit.outbox as OutboxItem[]) {
      if (o.kind !== 'work' || !isOccurrenceEvent(o.event)) continue;
      const data: WorkEventData = o.event.data;
      const item = out.items.find((i) => i.occurrence?.occurrenceId === data.occurrence_id)!;
      const expected = referenceWorkEvent(
        o.event.type,
        item,
        item.occurrence!,
        { workId: data.work_id, count: data.count, firstSeen: Date.parse(data.first_seen), lastSeen: Date.parse(data.last_seen) },
        data.decision,
      );
      assert.equal(JSON.stringify(o), JSON.stringify(expected));
      if (o.event.type === 'dev.vigil.work.updated') {
        // One per group and page, from the group's last occurrence of the page, with its state after the page.
        const last = out.items.filter((i) => i.occurrence?.groupKey === data.group_key).pop()!;
        assert.equal(data.occurrence_id, last.occurrence!.occurrenceId);
        assert.equal(data.count, state.groups.get(data.group_key)!.count);
        updates++;
      }
      assert.deepEqual(Object.keys(o.event.data), Object.keys(expected.event.data));
      seenShapes.add(Object.keys(data).join(',') + '|' + Object.keys(data.evidence).join(','));
      checked++;
    }
  }
  // Every optional key appeared, with and without the others.
  assert.ok(checked > 200 && updates > 50, `only ${checked} work events, ${updates} updates`);
  assert.ok(seenShapes.size >= 8, `only ${seenShapes.size} shapes of work event`);
});

test('python: the innermost in-app frames in one pass are the filtered, reversed, collapsed frames (random frame lists)', () => {
  // Few frames, drawn often: recursions (a, a), (a, b, a, b), external frames ('!') between them.
  const frame = fc.constantFrom('!', 'a:f', 'b:g', 'c:<module>', 'd:h');
  checkProperty(
    fc.property(fc.array(frame, { maxLength: 12 }), (frames) => {
      const expected = collapseFrames(frames.filter((f) => !f.startsWith('!')).reverse(), MAX_FRAMES);
      assert.deepEqual(innermostInApp(frames), expected, JSON.stringify(frames));
    }),
    { numRuns: 3000 },
  );
});

const groupKeyNames = ['groupKey', 'count', 'firstSeen', 'lastSeen', 'lastDecision', 'openWorkId', 'workGeneration', 'version'] as const;

test('memory store: a group state is copied field by field (any field order, other keys dropped as the Redis store does); an outbox entry by literal is the spread copy (key order included)', () => {
  const value = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.boolean());
  // The keys a group state holds, in order or shuffled, with others added.
  const keys = fc.oneof(
    fc.constant([...groupKeyNames] as string[]),
    fc
      .tuple(
        fc.shuffledSubarray([...groupKeyNames] as string[], { minLength: groupKeyNames.length }),
        fc.array(fc.constantFrom('extra', 'seq', 'kind'), { maxLength: 2 }),
      )
      .map(([a, b]) => [...a, ...b]),
  );
  checkProperty(
    fc.property(keys, fc.array(value, { minLength: 12, maxLength: 12 }), (ks, vs) => {
      const g = Object.fromEntries(ks.map((k, i) => [k, vs[i]])) as unknown as GroupState;
      const copy = copyGroup(g);
      assert.notEqual(copy, g);
      assert.deepEqual(
        Object.entries(copy),
        groupKeyNames.map((k) => [k, g[k]]),
      );
    }),
    { numRuns: 1000 },
  );
  const itemKeys = fc.oneof(fc.constant(['kind', 'id', 'event']), fc.shuffledSubarray(['kind', 'id', 'event', 'signal', 'record', 'occurrence', 'seq']));
  checkProperty(
    fc.property(itemKeys, fc.constantFrom('work', 'forward', 'occurrence'), fc.nat(), (ks, kind, seq) => {
      const o = Object.fromEntries(ks.map((k) => [k, k === 'kind' ? kind : { k }])) as unknown as OutboxItem;
      assert.deepEqual(Object.entries(withSeq(o, seq)), Object.entries({ ...o, seq }));
    }),
    { numRuns: 1000 },
  );
});

test('memory store: group states are frozen copies when committed and shared, frozen, when loaded', async () => {
  const store = new MemoryStore();
  await store.open();
  const g: GroupState = { groupKey: 'g_1', count: 1, firstSeen: 1, lastSeen: 1, lastDecision: 'BurstCoalesced', openWorkId: null, workGeneration: 0, version: 1 };
  await store.commit({ pipeline: 'logs', partition: 'p', cursor: null, groups: [g], turns: [], revisions: [], outbox: [], failures: [] });
  // The committer's object is its own: changing it later changes nothing stored.
  g.count = 99;
  const loaded = (await store.loadGroups(['g_1', 'g_none'])).get('g_1')!;
  assert.equal(loaded.count, 1);
  assert.deepEqual(Object.keys(loaded), Object.keys(g));
  assert.ok(Object.isFrozen(loaded));
  assert.throws(() => {
    (loaded as { count: number }).count = 5;
  }, TypeError);
  assert.equal((await store.loadGroups(['g_1'])).get('g_1')!.count, 1);
  // A later commit at the next version replaces it.
  await store.commit({
    pipeline: 'logs',
    partition: 'p',
    cursor: null,
    groups: [{ ...loaded, count: 2, version: 2 }],
    turns: [],
    revisions: [],
    outbox: [],
    failures: [],
  });
  assert.equal((await store.loadGroups(['g_1'])).get('g_1')!.count, 2);
});
