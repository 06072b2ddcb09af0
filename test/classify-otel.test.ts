/**
 * OpenTelemetry-native evidence gets the same diagnosis as the equivalent raw text (issue #3,
 * point 4): OTLP/JSON is decoded and mapped exactly as the receiver does (json.ts, mapping.ts),
 * then diagnosed; the raw text goes through `classifyLine({"text": …, "exit_code": 1})`.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentEvent } from '../src/model/event.ts';
import { classifyLine, diagnose, type ClassifiedLine } from '../src/processors/classify/classify.ts';
import { decodeLogsJson, decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { mapLogs, mapTraces } from '../src/receivers/otlp/mapping.ts';

const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const SPAN_ID = 'eee19b7ec3c1b174';
const NANOS = '1767225600000000000';

type Attr = { key: string; value: { stringValue: string } };
const attrs = (o: Record<string, string>): Attr[] => Object.entries(o).map(([key, v]) => ({ key, value: { stringValue: v } }));
const resource = { attributes: attrs({ 'service.name': 'agent', 'session.id': 's1' }) };

function logEvent(record: Record<string, unknown>): AgentEvent {
  const body = JSON.stringify({ resourceLogs: [{ resource, scopeLogs: [{ logRecords: [{ timeUnixNano: NANOS, ...record }] }] }] });
  const events = mapLogs(decodeLogsJson(body).groups).events;
  assert.equal(events.length, 1);
  return events[0]!;
}

function spanEvent(span: Record<string, unknown>): AgentEvent {
  const body = JSON.stringify({
    resourceSpans: [
      {
        resource,
        scopeSpans: [{ spans: [{ traceId: TRACE_ID, spanId: SPAN_ID, name: 'run_step', kind: 1, startTimeUnixNano: NANOS, endTimeUnixNano: NANOS, ...span }] }],
      },
    ],
  });
  const events = mapTraces(decodeTracesJson(body).groups).events;
  assert.equal(events.length, 1);
  return events[0]!;
}

function raw(text: string, exitCode = 1): ClassifiedLine {
  return classifyLine(JSON.stringify({ text, exit_code: exitCode }), 1) as ClassifiedLine;
}

function assertSame(event: AgentEvent, expected: ClassifiedLine, signature?: string): void {
  const d = diagnose(event);
  assert.deepEqual({ classification: d.classification, signature: d.signature, fingerprint: d.fingerprint }, expected);
  if (signature !== undefined) assert.equal(d.signature, signature);
  assert.match(String(d.fingerprint), /^v3:[0-9a-f]{16}$/);
}

// Real outputs (python3.11, node 20, java 17) from test/corpus; OpenTelemetry SDKs record the same
// text as `exception.stacktrace` (Python: traceback.format_exception; Node: err.stack; Java:
// printStackTrace, which lacks the `Exception in thread "main"` prefix of an uncaught exception).
const PY_TRACEBACK = [
  'Traceback (most recent call last):',
  '  File "/srv/agent/tools/app.py", line 13, in <module>',
  '    main()',
  '  File "/srv/agent/tools/app.py", line 10, in main',
  '    value = load_config("invoice_702")',
  '            ^^^^^^^^^^^^^^^^^^^^^^^^^^',
  '  File "/srv/agent/tools/app.py", line 7, in load_config',
  '    return CONFIG[name]',
  '           ~~~~~~^^^^^^',
  "KeyError: 'invoice_702'",
].join('\n');

const NODE_STACK = [
  "TypeError: Cannot read properties of undefined (reading 'email')",
  '    at emailOf (/srv/agent/users.js:7:21)',
  '    at Object.<anonymous> (/srv/agent/users.js:9:13)',
  '    at Module._compile (node:internal/modules/cjs/loader:1521:14)',
  '    at node:internal/main/run_main_module:28:49',
].join('\n');
const NODE_UNCAUGHT = `/srv/agent/users.js:7\n  return getUser(id).email;\n                    ^\n\n${NODE_STACK}\n\nNode.js v20.20.2\n`;

const JAVA_STACK = [
  'java.lang.RuntimeException: failed to load config',
  '\tat Main.load(Main.java:7)',
  '\tat Main.main(Main.java:11)',
  'Caused by: java.io.FileNotFoundException: /srv/cfg/config-6189.yml (No such file or directory)',
  '\tat java.base/java.io.FileInputStream.open0(Native Method)',
  '\tat java.base/java.io.FileInputStream.<init>(FileInputStream.java:157)',
  '\tat Main.load(Main.java:4)',
  '\t... 1 more',
].join('\n');

describe('log records with exception.* attributes', () => {
  test('exception.stacktrace (Python) = the raw traceback of a failed run', () => {
    const e = logEvent({
      severityNumber: 17,
      body: { stringValue: 'tool failed' },
      attributes: attrs({ 'exception.type': 'KeyError', 'exception.message': "'invoice_702'", 'exception.stacktrace': PY_TRACEBACK }),
    });
    assertSame(e, raw(PY_TRACEBACK), "KeyError: 'invoice_702'");
  });

  test('exception.type + exception.message, no stacktrace = the raw `Type: message` line', () => {
    const e = logEvent({ attributes: attrs({ 'exception.type': 'ConnectionRefusedError', 'exception.message': '[Errno 111] Connection refused' }) });
    assertSame(e, raw('ConnectionRefusedError: [Errno 111] Connection refused'), 'ConnectionRefusedError: [Errno 111] Connection refused');
  });

  test('exception.type alone = the raw type name', () => {
    const e = logEvent({ attributes: attrs({ 'exception.type': 'TimeoutError' }) });
    assertSame(e, raw('TimeoutError'), 'TimeoutError');
  });

  test('ERROR severity with a traceback body = the raw traceback', () => {
    const e = logEvent({ severityNumber: 17, severityText: 'ERROR', body: { stringValue: PY_TRACEBACK } });
    assertSame(e, raw(PY_TRACEBACK));
  });

  test('a volatile part differs (line numbers, paths): the same fingerprint', () => {
    const moved = PY_TRACEBACK.replaceAll('/srv/agent/tools', '/home/u/x').replace('line 13', 'line 99');
    const a = diagnose(logEvent({ attributes: attrs({ 'exception.stacktrace': PY_TRACEBACK }) }));
    const b = diagnose(logEvent({ attributes: attrs({ 'exception.stacktrace': moved }) }));
    assert.equal(a.fingerprint, b.fingerprint);
  });
});

describe('spans', () => {
  test('status ERROR with an `exception` event (Node err.stack) = the raw uncaught error node printed', () => {
    const e = spanEvent({
      status: { code: 2, message: "Cannot read properties of undefined (reading 'email')" },
      events: [
        {
          name: 'exception',
          timeUnixNano: NANOS,
          attributes: attrs({
            'exception.type': 'TypeError',
            'exception.message': "Cannot read properties of undefined (reading 'email')",
            'exception.stacktrace': NODE_STACK,
          }),
        },
      ],
    });
    assertSame(e, raw(NODE_UNCAUGHT), "TypeError: Cannot read properties of undefined (reading 'email')");
  });

  test('status ERROR with an `exception` event (Java printStackTrace) = the raw uncaught exception java printed', () => {
    const e = spanEvent({
      status: { code: 2 },
      events: [
        { name: 'exception', timeUnixNano: NANOS, attributes: attrs({ 'exception.type': 'java.lang.RuntimeException', 'exception.stacktrace': JAVA_STACK }) },
      ],
    });
    assertSame(e, raw(`Exception in thread "main" ${JAVA_STACK}`), 'java.io.FileNotFoundException: /srv/cfg/config-6189.yml (No such file or directory)');
  });

  test('status ERROR with a status message only = the raw message', () => {
    const e = spanEvent({ status: { code: 2, message: 'fatal: not a git repository (or any of the parent directories): .git' } });
    assertSame(e, raw('fatal: not a git repository (or any of the parent directories): .git'));
  });

  test('status ERROR with error.type and a status message = the raw `type: message` line', () => {
    const e = spanEvent({ status: { code: 2, message: '429 Rate limit reached for gpt-4o' }, attributes: attrs({ 'error.type': 'RateLimitError' }) });
    assertSame(e, raw('RateLimitError: 429 Rate limit reached for gpt-4o'), 'RateLimitError: 429 Rate limit reached for gpt-4o');
  });

  test('status ERROR with error.type only = the raw type', () => {
    const e = spanEvent({ status: { code: 2 }, attributes: attrs({ 'error.type': 'tool_error' }) });
    assertSame(e, raw('tool_error'), 'tool_error');
  });

  test('an `exception` event on a span that did not fail = the raw text on stderr of a successful run', () => {
    const e = spanEvent({
      status: { code: 0 },
      events: [{ name: 'exception', timeUnixNano: NANOS, attributes: attrs({ 'exception.stacktrace': PY_TRACEBACK }) }],
    });
    const d = diagnose(e);
    assert.equal(d.classification, 'RecoveredError');
    assertSame(e, raw(PY_TRACEBACK, 0));
  });
});

describe('log severity', () => {
  test('a WARN record whose text names no warning is a StderrWarning (raw text alone would be Uncertain)', () => {
    const text = 'retry budget low: cannot reserve 3 slots';
    const e = logEvent({ severityNumber: 13, severityText: 'WARN', body: { stringValue: text } });
    assert.equal(diagnose(e).classification, 'StderrWarning');
    assert.equal(raw(text, 0).classification, 'Uncertain');
  });
  test('an INFO record with benign error words stays Uncertain', () => {
    const e = logEvent({ severityNumber: 9, body: { stringValue: 'checked 12 files: 0 errors' } });
    assert.equal(diagnose(e).classification, 'Uncertain');
  });
});
