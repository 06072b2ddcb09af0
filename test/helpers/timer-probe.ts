/**
 * A test-only stateful processor (not in src/components.ts): the smallest user of processor state
 * and durable timers. For every record of a page it arms a timer `probe:<event id>` due `delay`
 * after the record's event time, and keeps a versioned checkpoint `<event id>` → {due, fired: 0};
 * when the timer fires it emits one `dev.vigil.provider.retry` work event (id
 * `probe-retry:<event id>`, with the time and the process it fired in) and deletes the checkpoint.
 * With `rearm: n` a fired timer is set again (same id, due + delay) until it has fired n+1 times.
 */
import { concatMap, from, map, of, type OperatorFunction } from 'rxjs';
import type { ProcessorFactory } from '../../src/component.ts';
import { s, type Infer } from '../../src/config/schema.ts';
import type { WorkOutboxItem } from '../../src/model/work.ts';
import { withState, withTimers, type WorkPage } from '../../src/processors/page.ts';
import type { StateClient } from '../../src/store/state-client.ts';
import type { StateWrite, TimerSpec } from '../../src/store/state.ts';

export interface ProbeOptions {
  delay: number;
  rearm: number;
}

interface Checkpoint {
  due: number;
  fired: number;
}

export function timerProbe(state: StateClient, opts: ProbeOptions, now: () => number = Date.now): OperatorFunction<WorkPage, WorkPage> {
  return concatMap((page) => (page.timers ? onTimers(page, state, opts, now) : onRecords(page, state, opts)));
}

function onRecords(page: WorkPage, state: StateClient, opts: ProbeOptions) {
  if (page.items.length === 0) return of(page);
  const ids = page.items.map((i) => i.entry.event.eventId);
  return from(state.load(ids)).pipe(
    map((stored) => {
      const writes: StateWrite[] = [];
      const timers: TimerSpec[] = [];
      for (const item of page.items) {
        const e = item.entry.event;
        if (stored.has(e.eventId)) continue;
        const due = e.time + opts.delay;
        writes.push(state.put(e.eventId, { due, fired: 0 } satisfies Checkpoint, { version: 1 }));
        timers.push(state.timer({ id: `probe:${e.eventId}`, partition: page.partition, due, payload: { eventId: e.eventId } }));
      }
      return withTimers(withState(page, writes), { set: timers });
    }),
  );
}

function onTimers(page: WorkPage, state: StateClient, opts: ProbeOptions, now: () => number) {
  const mine = state.ownTimers(page);
  if (mine.length === 0) return of(page);
  const ids = mine.map((t) => (t.payload as { eventId: string }).eventId);
  return from(state.load(ids)).pipe(
    map((stored) => {
      const firedAt = now();
      const writes: StateWrite[] = [];
      const rearm: TimerSpec[] = [];
      const outbox: WorkOutboxItem[] = [];
      mine.forEach((t, i) => {
        const eventId = ids[i]!;
        const ckpt = stored.get(eventId);
        const fired = ((ckpt?.value as Checkpoint | undefined)?.fired ?? 0) + 1;
        const id = `probe-retry:${eventId}:${fired}`;
        outbox.push({
          kind: 'work',
          id,
          event: {
            specversion: '1.0',
            id,
            source: 'vigil/probe',
            type: 'dev.vigil.provider.retry',
            time: new Date(firedAt).toISOString(),
            subject: eventId,
            datacontenttype: 'application/json',
            data: { request_id: id, event_id: eventId, due: t.due, fired_at: firedAt, fired, pid: process.pid, partition: page.partition } as never,
          },
        });
        const version = (ckpt?.version ?? 0) + 1;
        if (fired <= opts.rearm) {
          const due = t.due + opts.delay;
          writes.push(state.put(eventId, { due, fired } satisfies Checkpoint, { version }));
          rearm.push(state.timer({ id: t.id, partition: t.partition, due, payload: t.payload }));
        } else if (ckpt) {
          writes.push(state.delete(eventId, { version }));
        }
      });
      const next = withTimers(withState(page, writes), { set: rearm });
      return { ...next, commit: { ...next.commit, outbox: [...next.commit.outbox, ...outbox] } };
    }),
  );
}

const schema = s.object({
  delay: s.duration().default(60_000),
  rearm: s.int({ min: 0 }).default(0),
});

export const timerProbeFactory: ProcessorFactory<Infer<typeof schema>> = {
  type: 'timer_probe',
  schema,
  signals: ['traces', 'logs'],
  create: (settings, cfg) => timerProbe(settings.state, { delay: cfg.delay, rearm: cfg.rearm }),
};
