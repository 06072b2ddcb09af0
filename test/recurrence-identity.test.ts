/**
 * The recurrence processor builds the scope part of a group key once per run of one service (or
 * session) and formats work-event times without a Date: on random pages — services, sessions,
 * times (some before 1970, late arrivals) mixed within a page — every occurrence's group key is
 * the one `groupKey` gives for its own scope, and every work event's times are `toISOString`'s.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lastValueFrom, of } from 'rxjs';
import { groupKey, occurrenceId, UNKNOWN_REVISION } from '../src/model/identity.ts';
import { isOccurrenceEvent } from '../src/model/work.ts';
import { recurrence, type RecurrenceOptions } from '../src/processors/recurrence/operator.ts';
import { diagnosedPage, mapState, type FailureSpec } from './helpers/pages.ts';
import { seededRandom, testSeed } from './helpers/random.ts';

test('group keys and work-event times on random pages of mixed services and sessions (seeded)', async () => {
  const random = seededRandom(7);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  for (const scope of ['service', 'session'] as const) {
    const opts: RecurrenceOptions = { minRecurrence: 2, groupingWindow: 60_000, maxPerTurn: 1000, scope };
    const state = mapState();
    /** Group key → the times (toISOString) of its occurrences so far. */
    const seen = new Map<string, Set<string>>();
    const operator = recurrence(opts, {
      loadGroups: async (keys) => state.pick(state.groups, keys),
      loadTurns: async (_p, ids) => state.pick(state.turns, ids),
      lookupRevisions: async (ids) => state.pick(state.revisions, ids),
    });
    for (let round = 0; round < 30; round++) {
      const at = `seed ${testSeed()}, scope ${scope}, page ${round}`;
      const partition = pick(['s-1', 's-2', '']);
      const specs: FailureSpec[] = [];
      for (let n = 1 + Math.floor(random() * 40); n > 0; n--) {
        specs.push({
          time: Math.floor((random() - 0.2) * 4e12),
          signature: pick(['KeyError: a', 'KeyError: b', 'ValueError: c']),
          // Runs of one service and changes within the page, an empty one among them.
          service: random() < 0.7 ? 'agent' : pick(['agent', 'other', '', 'agent-2']),
          partition: random() < 0.8 ? partition : pick(['s-1', 's-2', 's-3', '']),
        });
      }
      const page = await lastValueFrom(of(diagnosedPage(specs, partition)).pipe(operator));
      state.apply(page.commit);
      for (const item of page.items) {
        const e = item.entry.event;
        const times = seen.get(item.occurrence!.groupKey) ?? new Set<string>();
        seen.set(item.occurrence!.groupKey, times.add(new Date(e.time).toISOString()));
        const expected = groupKey({
          scope: scope === 'session' ? `session:${e.partition}` : `service:${e.service}`,
          operation: undefined,
          revision: UNKNOWN_REVISION,
          fingerprint: item.diagnosis!.fingerprint!,
        });
        assert.equal(item.occurrence?.groupKey, expected, at);
        assert.equal(item.occurrence?.occurrenceId, occurrenceId(expected, e.eventId), at);
      }
      for (const o of page.commit.outbox) {
        if (o.kind !== 'work') continue;
        const ev = o.event;
        if (!isOccurrenceEvent(ev)) continue;
        const group = page.commit.groups.find((g) => g.groupKey === ev.subject)!;
        const item = page.items.find((i) => i.occurrence?.occurrenceId === ev.data.occurrence_id)!;
        assert.equal(ev.time, new Date(item.entry.event.time).toISOString(), at);
        if (ev.type === 'dev.vigil.work.updated') {
          // An update carries the group as the page left it.
          assert.equal(ev.data.first_seen, new Date(group.firstSeen).toISOString(), at);
          assert.equal(ev.data.last_seen, new Date(group.lastSeen).toISOString(), at);
        } else {
          // A creation carries the group as it was then: both times are those of its occurrences so far.
          const times = seen.get(group.groupKey)!;
          assert.ok(times.has(ev.data.first_seen) && times.has(ev.data.last_seen), at);
        }
      }
    }
  }
});
