import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isVigilError } from '../src/errors.ts';
import { MAX_JSON_DEPTH, decodeLogsJson, decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { MAX_ATTRIBUTES, MAX_STRING_BYTES, MAX_VALUE_DEPTH, summarize } from '../src/receivers/otlp/normalized.ts';

const EXAMPLES = path.resolve(import.meta.dirname, 'fixtures/otlp-examples');
const example = (name: string) => readFileSync(path.join(EXAMPLES, name));

const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const SPAN_ID = 'eee19b7ec3c1b174';

function span(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    traceId: TRACE_ID.toUpperCase(),
    spanId: SPAN_ID,
    name: 'execute_tool bash',
    startTimeUnixNano: '1544712660000000000',
    endTimeUnixNano: '1544712661500000000',
    ...overrides,
  };
}

function traces(spans: unknown[], resourceAttributes: unknown[] = []): string {
  return JSON.stringify({ resourceSpans: [{ resource: { attributes: resourceAttributes }, scopeSpans: [{ scope: { name: 's' }, spans }] }] });
}

function logs(logRecords: unknown[]): string {
  return JSON.stringify({ resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ logRecords }] }] });
}

function payloadError(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (err) {
    assert.ok(isVigilError(err, 'VIGIL_PAYLOAD_INVALID'), `expected VIGIL_PAYLOAD_INVALID, got ${String(err)}`);
    return { code: err.code, message: err.message };
  }
  assert.fail('expected a decode error');
}

describe('OTLP/JSON decoding: the official examples', () => {
  test('trace.json decodes to one span with lowercase ids, ms times and flattened attributes', () => {
    const { groups, stats } = decodeTracesJson(example('trace.json'));
    assert.equal(stats.rejected, 0);
    assert.equal(groups.length, 1);
    const g = groups[0]!;
    assert.deepEqual(g.resource, { 'service.name': 'my.service' });
    assert.deepEqual(g.scope, { name: 'my.library', version: '1.0.0', attributes: { 'my.scope.attribute': 'some scope attribute' } });
    const s = g.spans[0]!;
    assert.equal(s.traceId, TRACE_ID);
    assert.equal(s.spanId, SPAN_ID);
    assert.equal(s.parentSpanId, 'eee19b7ec3c1b173');
    assert.equal(s.name, "I'm a server span");
    assert.equal(s.kind, 2);
    assert.equal(s.startTimeMs, 1544712660000);
    assert.equal(s.endTimeMs, 1544712661000);
    assert.equal(s.startTimeUnixNano, '1544712660000000000');
    assert.deepEqual(s.attributes, { 'my.span.attr': 'some value' });
    assert.deepEqual(s.status, { code: 0, message: '' });
  });

  test('logs.json decodes every AnyValue kind', () => {
    const { groups, stats } = decodeLogsJson(example('logs.json'));
    assert.equal(stats.rejected, 0);
    const log = groups[0]!.logs[0]!;
    assert.equal(log.body, 'Example log record');
    assert.equal(log.severityNumber, 10);
    assert.equal(log.severityText, 'Information');
    assert.equal(log.timeMs, 1544712660300);
    assert.equal(log.traceId, TRACE_ID);
    assert.equal(log.spanId, SPAN_ID);
    assert.deepEqual(log.attributes, {
      'string.attribute': 'some string',
      'boolean.attribute': true,
      'int.attribute': 10,
      'double.attribute': 637.704,
      'array.attribute': ['many', 'values'],
      'map.attribute': { 'some.map.key': 'some value' },
    });
  });

  test('events.json decodes the eventName field and a kvlist body', () => {
    const { groups, stats } = decodeLogsJson(example('events.json'));
    assert.equal(stats.rejected, 0);
    const log = groups[0]!.logs[0]!;
    assert.equal(log.eventName, 'browser.page_view');
    assert.equal(log.traceId, undefined);
    assert.deepEqual(log.body, {
      type: 0,
      url: 'https://www.guidgenerator.com/online-guid-generator.aspx',
      referrer: 'https://wwww.google.com',
      title: 'Free Online GUID Generator',
    });
  });
});

describe('OTLP/JSON decoding: lenient where proto3 JSON is', () => {
  test('snake_case field names, enum names, int64 as numbers and null defaults are accepted', () => {
    const body = JSON.stringify({
      resource_spans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { string_value: 'agent' } }] },
          scope_spans: [
            {
              spans: [
                {
                  trace_id: TRACE_ID,
                  span_id: SPAN_ID,
                  parent_span_id: null,
                  name: 'chat gpt',
                  kind: 'SPAN_KIND_CLIENT',
                  start_time_unix_nano: 1544712660000000000,
                  end_time_unix_nano: '1544712661000000000',
                  attributes: [{ key: 'n', value: { int_value: 7 } }],
                  status: { code: 'STATUS_CODE_ERROR', message: 'boom' },
                  events: [{ name: 'exception', time_unix_nano: '1544712660500000000', attributes: [] }],
                },
              ],
            },
          ],
        },
      ],
    });
    const { groups, stats } = decodeTracesJson(body);
    assert.equal(stats.rejected, 0, stats.messages.join('\n'));
    const s = groups[0]!.spans[0]!;
    assert.equal(groups[0]!.resource['service.name'], 'agent');
    assert.equal(s.kind, 3);
    assert.equal(s.parentSpanId, undefined);
    assert.deepEqual(s.status, { code: 2, message: 'boom' });
    assert.equal(s.attributes.n, 7);
    assert.equal(Math.round(s.startTimeMs!), 1544712660000);
    assert.equal(s.events[0]!.timeMs, 1544712660500);
  });

  test('severity names, bytes and out-of-range int64 values', () => {
    const { groups, stats } = decodeLogsJson(
      logs([
        {
          severityNumber: 'SEVERITY_NUMBER_ERROR',
          body: { bytesValue: 'aGVsbG8=' },
          attributes: [
            { key: 'big', value: { intValue: '9223372036854775807' } },
            { key: 'nan', value: { doubleValue: 'NaN' } },
            { key: 'empty', value: {} },
          ],
        },
      ]),
    );
    assert.equal(stats.rejected, 0, stats.messages.join('\n'));
    const log = groups[0]!.logs[0]!;
    assert.equal(log.severityNumber, 17);
    assert.equal(log.body, 'aGVsbG8=');
    assert.deepEqual(log.attributes, { big: '9223372036854775807', nan: 'NaN', empty: null });
    assert.equal(log.timeMs, undefined);
  });

  test('unknown fields are ignored', () => {
    const { groups, stats } = decodeTracesJson(traces([span({ futureField: { x: 1 } })]));
    assert.equal(stats.rejected, 0);
    assert.equal(groups[0]!.spans.length, 1);
  });

  test('an empty request object is valid and holds nothing', () => {
    assert.deepEqual(decodeTracesJson('{}').groups, []);
    assert.deepEqual(decodeLogsJson('{"resourceLogs":[]}').groups, []);
  });
});

describe('OTLP/JSON decoding: per-record rejection (partial success)', () => {
  test('a span with a wrong-typed name is rejected alone; the rest is accepted', () => {
    const body = traces([span({ spanId: '0000000000000001' }), span({ spanId: '0000000000000002', name: 5 }), span({ spanId: '0000000000000003' })]);
    const { groups, stats } = decodeTracesJson(body);
    assert.equal(stats.rejected, 1);
    assert.deepEqual(
      groups[0]!.spans.map((s) => s.spanId),
      ['0000000000000001', '0000000000000003'],
    );
    assert.match(stats.messages[0]!, /resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[1\]\.name: must be a string, got number 5/);
  });

  test('bad ids, times and values each reject their record with a precise message', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ traceId: 'abc' }, /spans\[0\]\.traceId: must be 32 hex characters, got the string "abc"/],
      [{ traceId: '00000000000000000000000000000000' }, /traceId: is required/],
      [{ spanId: 'zzzzzzzzzzzzzzzz' }, /spanId: must be 16 hex characters/],
      [{ startTimeUnixNano: 'yesterday' }, /startTimeUnixNano: must be nanoseconds since the epoch/],
      [{ endTimeUnixNano: -5 }, /endTimeUnixNano: must be nanoseconds/],
      [{ kind: 'SIDEWAYS' }, /kind: must be an enum integer/],
      [{ attributes: [{ key: 'a', value: { stringValue: 5 } }] }, /attributes\[0\]\.value\.stringValue: must be a string/],
      [{ attributes: [{ key: 'a', value: { stringValue: 'x', intValue: 1 } }] }, /sets exactly one value, got stringValue and intValue/],
      [{ attributes: { a: 1 } }, /attributes: must be an array/],
      [{ status: { code: 2, message: 7 } }, /status\.message: must be a string/],
      [{ events: [{ name: 'exception', timeUnixNano: 'x' }] }, /events\[0\]\.timeUnixNano/],
    ];
    for (const [overrides, expected] of cases) {
      const { groups, stats } = decodeTracesJson(traces([span(overrides), span({ spanId: 'aaaaaaaaaaaaaaaa' })]));
      assert.equal(stats.rejected, 1, `${JSON.stringify(overrides)} should be rejected`);
      assert.equal(groups[0]!.spans.length, 1);
      assert.match(stats.messages[0]!, expected);
    }
  });

  test('many bad records: all counted, messages bounded with a count of the rest', () => {
    const bad = Array.from({ length: 50 }, () => span({ name: 1 }));
    const { stats } = decodeTracesJson(traces([...bad, span()]));
    assert.equal(stats.rejected, 50);
    assert.equal(stats.messages.length, 20);
    assert.equal(stats.omittedMessages, 30);
    assert.match(summarize(stats), /; and 30 more$/);
  });

  test('a log record with a bad timeUnixNano or traceId is rejected; an empty trace id is absent', () => {
    const { groups, stats } = decodeLogsJson(
      logs([
        { timeUnixNano: '12.5', body: { stringValue: 'a' } },
        { traceId: '1234', body: { stringValue: 'b' } },
        { traceId: '', spanId: '', body: { stringValue: 'c' } },
      ]),
    );
    assert.equal(stats.rejected, 2);
    assert.equal(groups[0]!.logs.length, 1);
    assert.equal(groups[0]!.logs[0]!.traceId, undefined);
    assert.match(stats.messages[0]!, /logRecords\[0\]\.timeUnixNano/);
    assert.match(stats.messages[1]!, /logRecords\[1\]\.traceId/);
  });

  test('a bad resource rejects the records under it, not the request', () => {
    const body = JSON.stringify({
      resourceSpans: [
        { resource: { attributes: [{ key: 'service.name', value: { stringValue: true } }] }, scopeSpans: [{ spans: [span(), span()] }] },
        { resource: {}, scopeSpans: [{ spans: [span()] }] },
      ],
    });
    const { groups, stats } = decodeTracesJson(body);
    assert.equal(stats.rejected, 2);
    assert.equal(groups.length, 1);
    assert.match(stats.messages[0]!, /resourceSpans\[0\]\.resource\.attributes\[0\]\.value\.stringValue.*all 2 record\(s\) of resourceSpans\[0\] rejected/);
  });
});

describe('OTLP/JSON decoding: whole-request errors', () => {
  test('a body that is not JSON', () => {
    const e = payloadError(() => decodeTracesJson('{"resourceSpans": ['));
    assert.match(e.message, /^request body is not valid JSON: /);
  });

  test('an empty body', () => {
    assert.match(payloadError(() => decodeLogsJson('')).message, /request body is empty/);
  });

  test('a top level that is not an object', () => {
    assert.match(payloadError(() => decodeTracesJson('[]')).message, /must be a JSON object \(ExportTraceServiceRequest\), got an array/);
    assert.match(payloadError(() => decodeLogsJson('"x"')).message, /ExportLogsServiceRequest/);
  });

  test('structure above the records that is not the expected one names its path', () => {
    assert.match(payloadError(() => decodeTracesJson('{"resourceSpans": {}}')).message, /^resourceSpans must be an array, got an object/);
    assert.match(payloadError(() => decodeTracesJson('{"resourceSpans": [{"scopeSpans": 3}]}')).message, /^resourceSpans\[0\]\.scopeSpans must be an array/);
    assert.match(
      payloadError(() => decodeLogsJson('{"resourceLogs": [{"scopeLogs": [{"logRecords": "x"}]}]}')).message,
      /^resourceLogs\[0\]\.scopeLogs\[0\]\.logRecords must be an array/,
    );
  });

  test('a body that is not UTF-8', () => {
    assert.match(payloadError(() => decodeTracesJson(new Uint8Array([0x7b, 0xff, 0x7d]))).message, /not valid UTF-8/);
  });
});

describe('OTLP/JSON decoding: bounds', () => {
  test(`at most ${MAX_ATTRIBUTES} attributes per record; the rest are dropped and counted`, () => {
    const attributes = Array.from({ length: 200 }, (_, i) => ({ key: `k${i}`, value: { intValue: String(i) } }));
    const { groups, stats } = decodeTracesJson(traces([span({ attributes })]));
    assert.equal(Object.keys(groups[0]!.spans[0]!.attributes).length, MAX_ATTRIBUTES);
    assert.equal(stats.droppedAttributes, 200 - MAX_ATTRIBUTES);
    assert.equal(stats.rejected, 0);
    assert.match(summarize(stats), /72 attribute\(s\) dropped/);
  });

  test('long string values are truncated to 8 KiB keeping head and tail', () => {
    const long = 'Traceback (most recent call last):\n' + 'x'.repeat(20_000) + '\nZeroDivisionError: division by zero';
    const { groups, stats } = decodeTracesJson(traces([span({ attributes: [{ key: 'exception.stacktrace', value: { stringValue: long } }] })]));
    const value = groups[0]!.spans[0]!.attributes['exception.stacktrace'] as string;
    assert.ok(Buffer.byteLength(value) <= MAX_STRING_BYTES, `${Buffer.byteLength(value)} bytes`);
    assert.ok(value.startsWith('Traceback (most recent call last):'));
    assert.ok(value.endsWith('ZeroDivisionError: division by zero'));
    assert.match(value, /bytes truncated/);
    assert.equal(stats.truncatedValues, 1);
  });

  test('multi-byte text is cut on character boundaries', () => {
    const long = 'é'.repeat(10_000);
    const { groups } = decodeTracesJson(traces([span({ attributes: [{ key: 'a', value: { stringValue: long } }] })]));
    const value = groups[0]!.spans[0]!.attributes.a as string;
    assert.ok(!value.includes('\ufffd'));
  });

  test(`values nested deeper than ${MAX_VALUE_DEPTH} levels are replaced by null and counted`, () => {
    let value: Record<string, unknown> = { stringValue: 'leaf' };
    for (let i = 0; i < 12; i++) value = { arrayValue: { values: [value] } };
    const { groups, stats } = decodeTracesJson(traces([span({ attributes: [{ key: 'deep', value }] })]));
    let v: unknown = groups[0]!.spans[0]!.attributes.deep;
    let depth = 0;
    while (Array.isArray(v)) {
      v = v[0];
      depth++;
    }
    assert.equal(v, null);
    assert.equal(depth, MAX_VALUE_DEPTH - 1);
    assert.equal(stats.truncatedDepth, 1);
  });

  test('bounds counted in a record that is then rejected are not reported', () => {
    const attributes = Array.from({ length: 130 }, (_, i) => ({ key: `k${i}`, value: { stringValue: 'v' } }));
    const { stats } = decodeTracesJson(traces([span({ attributes, name: 1 })]));
    assert.equal(stats.rejected, 1);
    assert.equal(stats.droppedAttributes, 0);
  });

  test('an attribute named __proto__ stays an ordinary key', () => {
    const { groups } = decodeTracesJson(traces([span({ attributes: [{ key: '__proto__', value: { stringValue: 'x' } }] })]));
    const attrs = groups[0]!.spans[0]!.attributes;
    assert.equal(Object.getPrototypeOf(attrs), Object.prototype);
    assert.equal(Object.getOwnPropertyDescriptor(attrs, '__proto__')?.value, 'x');
  });
});

describe('OTLP/JSON decoding: nesting is bounded', () => {
  test(`nesting deeper than ${MAX_JSON_DEPTH} levels refuses the request where it is crossed`, () => {
    const deep = '['.repeat(1_000_000) + ']'.repeat(1_000_000);
    assert.equal(
      payloadError(() => decodeTracesJson(deep)).message,
      `request body is not valid JSON: nested deeper than ${MAX_JSON_DEPTH} levels at byte ${MAX_JSON_DEPTH}`,
    );
    const inUnknownField = `{"x":${'{"a":'.repeat(300)}1${'}'.repeat(300)}}`;
    assert.match(payloadError(() => decodeLogsJson(inUnknownField)).message, /nested deeper than 256 levels at byte \d+$/);
  });

  test('values nested as deep as senders use are read (and cut to the value depth bound), not refused', () => {
    let value: Record<string, unknown> = { stringValue: 'leaf' };
    for (let i = 0; i < 40; i++) value = { kvlistValue: { values: [{ key: 'k', value }] } };
    const { groups, stats } = decodeTracesJson(traces([span({ attributes: [{ key: 'deep', value }] })]));
    assert.equal(stats.rejected, 0);
    assert.equal(stats.truncatedDepth, 1);
    assert.ok(groups[0]!.spans[0]!.attributes.deep);
  });
});
