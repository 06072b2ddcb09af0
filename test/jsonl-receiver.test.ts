import assert from 'node:assert/strict';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { VigilError } from '../src/errors.ts';
import { memoryLogger } from '../src/logger.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { jsonlReceiverFactory } from '../src/receivers/jsonl/factory.ts';
import { parseReferenceLine } from '../src/receivers/jsonl/parse.ts';
import { tempDir, waitFor } from './helpers/vigil-process.ts';

const line = (o: unknown) => JSON.stringify(o) + '\n';

describe('jsonl receiver', () => {
  test('parses reference events and reports malformed lines precisely', () => {
    const ok = parseReferenceLine(
      line({ kind: 'execution.completed', payload: { state: 'error' }, partition: 's1', time: '2026-01-01T00:00:00Z' }),
      { source: 'f', lineNo: 1 },
      () => 0,
    );
    assert.ok(ok.ok);
    assert.equal(ok.ok && ok.event.time, Date.parse('2026-01-01T00:00:00Z'));
    assert.equal(ok.ok && ok.event.partition, 's1');
    assert.equal(ok.ok && ok.event.clockTime, undefined);
    // A line without a time takes the receiver's clock, marked: the dedupe then knows it by its id alone.
    const untimed = parseReferenceLine(line({ kind: 'execution.completed', payload: {}, event_id: 'e' }), { source: 'f', lineNo: 2 }, () => 1234);
    assert.ok(untimed.ok);
    assert.equal(untimed.ok && untimed.event.time, 1234);
    assert.equal(untimed.ok && untimed.event.clockTime, true);
    const cases: Array<[string, RegExp]> = [
      ['{nope', /not valid JSON/],
      ['[1,2]', /expected a JSON object/],
      ['{"payload":{}}', /missing string field 'kind'/],
      ['{"kind":"x","payload":[]}', /missing object field 'payload'/],
      ['{"kind":"x","payload":{},"time":"yesterday"}', /field 'time'/],
    ];
    for (const [input, re] of cases) {
      const r = parseReferenceLine(input, { source: 'f', lineNo: 1 }, () => 0);
      assert.ok(!r.ok && re.test(r.error), `${input} → ${JSON.stringify(r)}`);
    }
  });

  test('follows a file, skips malformed lines with a counted warning, retries refused batches, restarts after truncation', async () => {
    const dir = tempDir();
    const file = join(dir, 'events.jsonl');
    const ev = (id: string) => line({ kind: 'execution.completed', payload: { state: 'error', outcome: { error: 'E: x' } }, event_id: id, time: 1 });
    writeFileSync(file, ev('a') + '{broken\n' + ev('b'));
    const got: AgentEvent[] = [];
    let refuseNext = true;
    const logger = memoryLogger();
    const receiver = jsonlReceiverFactory.create(
      {
        id: 'jsonl',
        logger,
        consumers: {
          logs: async (events) => {
            if (refuseNext) {
              refuseNext = false;
              throw new VigilError('VIGIL_INGEST_BACKPRESSURE', 'busy', { transient: true });
            }
            got.push(...events);
            return { appended: events.length, duplicates: 0 };
          },
        },
      },
      { include: [join(dir, '*.jsonl')], start_at: 'beginning', poll_interval: 20, batch_size: 256 },
    );
    await receiver.start();
    try {
      await waitFor(() => (got.length === 2 ? true : undefined), 'two events');
      assert.deepEqual(
        got.map((e) => e.eventId),
        ['a', 'b'],
      );
      const warning = logger.entries.find((e) => String(e.msg).includes(`${file}:2: skipped: not valid JSON`));
      assert.ok(warning, JSON.stringify(logger.entries));
      appendFileSync(file, ev('c'));
      await waitFor(() => (got.length === 3 ? true : undefined), 'an appended line');
      writeFileSync(file, ev('d'));
      await waitFor(() => (got.some((e) => e.eventId === 'd') ? true : undefined), 'the truncated file re-read');
    } finally {
      await receiver.shutdown();
    }
  });
});
