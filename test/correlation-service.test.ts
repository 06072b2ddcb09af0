/**
 * Trace-aware sessions and one failure, one occurrence, through a running vigil (in process,
 * memory store, real OTLP/HTTP requests): the records the test agents send, split over requests
 * in every ordering that matters — child before root, root before child, log before span, span
 * before log, one trace over several requests and pages — give one work item per failure, in
 * the session of its trace. And two pipelines that take the same receiver count each record once.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { Service } from '../src/service/service.ts';
import { aiSdkTurn, logsBody, openaiTurn, tracesBody, type AgentRecord } from './helpers/agent-records.ts';
import { startService } from './helpers/in-process.ts';
import { freePort, tempDir, waitFor } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

type WorkEvent = { id: string; type: string; data: Record<string, any> };

const WAITS = 'correlation: { session_wait: 1500ms, failure_wait: 400ms }';

async function start(opts: { pipelines?: string; extra?: string; processors?: string } = {}) {
  const dir = tempDir();
  const port = await freePort();
  const work = join(dir, 'work.jsonl');
  const yaml = `
receivers: { otlp: { protocols: { http: { endpoint: 127.0.0.1:${port} } } } }
processors: { classify: {}, recurrence: { min_recurrence: 1 } ${opts.processors ?? ''} }
exporters: { file: { path: ${work} }, file/b: { path: ${join(dir, 'work-b.jsonl')} } }
state: { memory: {} }
service:
  ${WAITS}
  ${opts.extra ?? ''}
  pipelines:
${
  opts.pipelines ??
  `    traces: { receivers: [otlp], processors: [classify, recurrence], exporters: [file] }
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file] }`
}
`;
  const { service } = await startService(yaml);
  const base = `http://127.0.0.1:${port}`;
  return { service, base, work, workB: join(dir, 'work-b.jsonl') };
}

async function send(base: string, records: readonly AgentRecord[]): Promise<void> {
  const spans = records.filter((r) => r.kind === 'span');
  const logs = records.filter((r) => r.kind === 'log');
  for (const [path, body] of [
    ['/v1/traces', spans.length ? tracesBody(spans) : undefined],
    ['/v1/logs', logs.length ? logsBody(logs) : undefined],
  ] as const) {
    if (!body) continue;
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(res.status, 200, await res.text());
  }
}

function readWork(file: string): WorkEvent[] {
  return writtenJsonLines<WorkEvent>(file);
}

/** Waits until `n` work.created events are delivered and the correlation log and pipelines are idle; then a little longer, to see nothing more comes. */
async function settled(service: Service, file: string, n: number): Promise<WorkEvent[]> {
  await waitFor(() => (readWork(file).filter((e) => e.type === 'dev.vigil.work.created').length >= n ? true : undefined), `${n} work items in ${file}`, 15_000);
  await waitFor(async () => {
    const st = (await service.status()) as {
      store: { pipelines: Array<{ partitions: Array<{ pending: number }>; outbox: { exporters: Array<{ lag: number }> } }> };
    };
    return st.store.pipelines.every((p) => p.partitions.every((x) => x.pending === 0) && p.outbox.exporters.every((e) => e.lag === 0)) ? true : undefined;
  }, 'an idle vigil');
  await new Promise((r) => setTimeout(r, 600));
  return readWork(file);
}

const created = (events: WorkEvent[]) => events.filter((e) => e.type === 'dev.vigil.work.created');

describe('trace-aware sessions and one failure, one occurrence, through a running vigil', () => {
  const services: Service[] = [];
  after(async () => {
    for (const s of services) await s.shutdown();
  });

  const T0 = Date.UTC(2026, 1, 2, 9, 0, 0);
  const orderings: Array<[string, (t: ReturnType<typeof openaiTurn>) => AgentRecord[][]]> = [
    ['child before root (the root arrives after the waits began)', (t) => [[t.tool, t.chat], [t.toolLog, t.chatLog], [t.root]]],
    ['root before child', (t) => [[t.root], [t.tool, t.chat], [t.toolLog, t.chatLog]]],
    [
      'log before span',
      (t) => [
        [t.toolLog, t.chatLog],
        [t.tool, t.chat, t.root],
      ],
    ],
    [
      'span before log',
      (t) => [
        [t.tool, t.chat, t.root],
        [t.toolLog, t.chatLog],
      ],
    ],
    ['one record per request, in export order', (t) => t.all.map((r) => [r])],
  ];

  for (const [name, requests] of orderings) {
    test(`the openai agent's turn, ${name}: one work item per failure, in the root's session`, async () => {
      const v = await start();
      services.push(v.service);
      const turn = openaiTurn(T0, 'sess-order');
      for (const r of requests(turn)) {
        await send(v.base, r);
        await new Promise((res) => setTimeout(res, 100));
      }
      const events = await settled(v.service, v.work, 2);
      const items = created(events);
      assert.equal(items.length, 2, JSON.stringify(items.map((e) => e.data.signature)));
      assert.equal(events.length, 2, 'no updates: each failure counted once');
      for (const e of items) {
        assert.equal(e.data.partition, 'sess-order');
        assert.equal(e.data.trace_id, turn.traceId);
        assert.equal(e.data.evidence.source, 'otlp.traces', 'the span names the failure');
        assert.equal(e.data.evidence.related?.length, 1, 'the log is attached as evidence');
        assert.equal(e.data.evidence.related[0].source, 'otlp.logs');
      }
      const ops = items.map((e) => e.data.operation).sort();
      assert.deepEqual(ops, ['chat gpt-4o-mini', 'execute_tool run_python']);
      const chat = items.find((e) => e.data.operation === 'chat gpt-4o-mini')!;
      assert.match(chat.data.signature, /^RateLimitError: 429 Rate limit reached/);
    });
  }

  test('one trace over several requests and pages of one record', async () => {
    const v = await start({ extra: 'processing: { page_size: 1 }' });
    services.push(v.service);
    const turn = openaiTurn(T0, 'sess-pages');
    const second = openaiTurn(T0 + 60_000, 'sess-pages');
    for (const r of [...turn.all, ...second.all]) await send(v.base, [r]);
    const items = created(await settled(v.service, v.work, 2));
    // The same two failures twice in one session: two groups, each with one work item.
    assert.equal(items.length, 2);
    const all = readWork(v.work);
    assert.deepEqual(
      all.filter((e) => e.type === 'dev.vigil.work.updated').map((e) => e.data.count),
      [2, 2],
    );
    assert.ok(all.every((e) => e.data.partition === 'sess-pages'));
  });

  test('the AI SDK agent: one work item for a 429 that fails doGenerate, generateText and the root; named by doGenerate', async () => {
    const v = await start();
    services.push(v.service);
    const turn = aiSdkTurn(T0, 'sess-ai', { rootErrors: true });
    for (const r of turn.all) await send(v.base, [r]);
    const items = created(await settled(v.service, v.work, 1));
    assert.equal(items.length, 1);
    const e = items[0]!;
    assert.equal(e.data.operation, 'ai.generateText.doGenerate');
    assert.equal(e.data.partition, 'sess-ai');
    assert.equal(e.data.user, 'user-1');
    assert.equal(e.data.evidence.related.length, 2);
  });

  test('a trace that never names its session: its records go to service.instance.id after session_wait', async () => {
    const v = await start();
    services.push(v.service);
    const turn = openaiTurn(T0, undefined);
    const sent = Date.now();
    await send(v.base, turn.all);
    const items = created(await settled(v.service, v.work, 2));
    assert.ok(Date.now() - sent >= 1500, 'they waited session_wait');
    assert.deepEqual(
      items.map((e) => e.data.partition),
      ['agent-host-1', 'agent-host-1'],
    );
  });

  test('two pipelines take the same receiver: each record is counted once, and both deliver the same work events', async () => {
    const v = await start({
      processors: ', recurrence/b: { min_recurrence: 2 }',
      pipelines: `    logs: { receivers: [otlp], processors: [classify, recurrence/b], exporters: [file] }
    logs/b: { receivers: [otlp], processors: [classify, recurrence/b], exporters: [file/b] }`,
    });
    services.push(v.service);
    // Records outside a trace, one session: the correlation log is not involved.
    const log = (time: number, uid: string) => ({
      kind: 'log' as const,
      traceId: '',
      spanId: '',
      time,
      body: 'ValueError: bad row 7',
      attributes: { 'session.id': 'sess-two', 'log.record.uid': uid },
    });
    await send(v.base, [log(T0, 'r1')]);
    await send(v.base, [log(T0 + 1000, 'r2')]);
    await send(v.base, [log(T0 + 2000, 'r3')]);
    const a = await settled(v.service, v.work, 1);
    await waitFor(() => (readWork(v.workB).length >= a.length ? true : undefined), 'pipeline b delivers too');
    const b = readWork(v.workB);
    const summary = (es: WorkEvent[]) => es.map((e) => [e.id, e.type, e.data.count, e.data.decision]).sort();
    assert.deepEqual(summary(b), summary(a), 'the same events, by id and content');
    assert.deepEqual(
      a.map((e) => [e.type, e.data.count, e.data.decision]),
      [
        ['dev.vigil.work.created', 2, 'BurstThresholdReached'],
        ['dev.vigil.work.updated', 3, 'BurstThresholdReached'],
      ],
      'counts 2 and 3 for the second and third record: none counted twice, none judged against a later one',
    );
    const st = (await v.service.status()) as { store: { groups: number } };
    assert.equal(st.store.groups, 1);
  });
});
