import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyLine } from '../src/processors/classify/classify.ts';
import { fingerprint } from '../src/processors/classify/fingerprint.ts';

/**
 * The vigil rules answer like the reference on these rows (same class, signature and reason), with
 * a v3 fingerprint where the reference has a v1 one.
 */
function assertVigil(actual: unknown, expected: Record<string, unknown>): void {
  const out = actual as Record<string, unknown>;
  if (expected.fingerprint === null) {
    assert.deepEqual(out, expected);
    return;
  }
  assert.match(String(out.fingerprint), /^v3:[0-9a-f]{16}$/);
  assert.deepEqual({ ...out, fingerprint: expected.fingerprint }, expected);
}

const TRACEBACK = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nZeroDivisionError: division by zero\n';

describe('classifyLine: reference events', () => {
  const rows: Array<[name: string, input: unknown, expected: Record<string, unknown>]> = [
    [
      'failed execution',
      { kind: 'execution.completed', payload: { state: 'error', outcome: { error: TRACEBACK } } },
      { classification: 'ExecutionFailure', signature: 'ZeroDivisionError: division by zero', fingerprint: fingerprint('ZeroDivisionError: division by zero') },
    ],
    [
      'recovered error on stderr',
      { kind: 'execution.completed', payload: { state: 'ok', outcome: { output: [{ name: 'stderr', text: 'KeyError: 1' }] } } },
      { classification: 'RecoveredError', signature: 'KeyError: 1', fingerprint: fingerprint('KeyError: 1') },
    ],
    [
      'skipped peer call keeps its reason',
      { kind: 'tool.result', payload: { type: 'tool_result', status: 'skipped', reason: 'duplicate call' } },
      { classification: 'SkippedPeerCall', signature: null, fingerprint: null, reason: 'duplicate call' },
    ],
    [
      'tool error with fallback',
      { kind: 'scratchpad', payload: { type: 'tool_result', status: 'error' } },
      { classification: 'ExecutionFailure', signature: 'ToolError', fingerprint: fingerprint('ToolError') },
    ],
    ['unknown kind', { kind: 'chat', payload: {} }, { classification: 'NormalOutput', signature: null, fingerprint: null }],
    ['extra keys are ignored', { kind: 'chat', payload: {}, id: 7, ts: 'x' }, { classification: 'NormalOutput', signature: null, fingerprint: null }],
  ];
  for (const [name, input, expected] of rows) {
    test(name, () => assertVigil(classifyLine(JSON.stringify(input), 1), expected));
    test(`${name} (reference rules: fingerprint v1 of the signature)`, () => assert.deepEqual(classifyLine(JSON.stringify(input), 1, 'reference'), expected));
  }
});

describe('classifyLine: raw text', () => {
  const rows: Array<[name: string, input: unknown, expected: Record<string, unknown>]> = [
    [
      'exit_code != 0 is a failed execution',
      { text: TRACEBACK, exit_code: 1 },
      { classification: 'ExecutionFailure', signature: 'ZeroDivisionError: division by zero', fingerprint: fingerprint('ZeroDivisionError: division by zero') },
    ],
    [
      'negative exit_code is a failure too',
      { text: 'Killed', exit_code: -9 },
      { classification: 'ExecutionFailure', signature: 'Killed', fingerprint: fingerprint('Killed') },
    ],
    [
      'failed execution with empty text → ExecutionError',
      { text: '', exit_code: 2 },
      { classification: 'ExecutionFailure', signature: 'ExecutionError', fingerprint: fingerprint('ExecutionError') },
    ],
    [
      'exit_code 0: error text on stderr is recovered',
      { text: 'ValueError: retried', exit_code: 0 },
      { classification: 'RecoveredError', signature: 'ValueError: retried', fingerprint: fingerprint('ValueError: retried') },
    ],
    ['exit_code absent: warning on stderr', { text: 'warning: deprecated flag' }, { classification: 'StderrWarning', signature: null, fingerprint: null }],
    ['exit_code null counts as absent', { text: 'progress 10%', exit_code: null }, { classification: 'Uncertain', signature: null, fingerprint: null }],
    ['empty text, success → NormalOutput', { text: '' }, { classification: 'NormalOutput', signature: null, fingerprint: null }],
  ];
  for (const [name, input, expected] of rows) {
    test(name, () => assertVigil(classifyLine(JSON.stringify(input), 3), expected));
    test(`${name} (reference rules: fingerprint v1 of the signature)`, () => assert.deepEqual(classifyLine(JSON.stringify(input), 3, 'reference'), expected));
  }
});

describe('classifyLine: malformed lines', () => {
  const rows: Array<[name: string, line: string, expected: string]> = [
    ['empty line', '', 'line 7: empty line; expected a JSON object'],
    ['blank line', '   ', 'line 7: empty line; expected a JSON object'],
    ['not JSON', '{"text": ', 'line 7: not valid JSON ('],
    ['plain words', 'hello', 'line 7: not valid JSON ('],
    ['an array', '[1,2]', 'line 7: expected a JSON object, got an array'],
    ['a string', '"text"', 'line 7: expected a JSON object, got the string "text"'],
    ['null', 'null', 'line 7: expected a JSON object, got null'],
    ['a number', '42', 'line 7: expected a JSON object, got number 42'],
    ['neither form', '{"payload": {}}', 'line 7: expected a reference event {"kind": ..., "payload": {...}} or raw text {"text": ..., "exit_code": N}'],
    ['empty object', '{}', 'line 7: expected a reference event'],
    ['both forms', '{"kind": "x", "payload": {}, "text": "t"}', 'line 7: has both "kind" and "text"'],
    ['kind not a string', '{"kind": 5, "payload": {}}', 'line 7: "kind" must be a string, got number 5'],
    ['payload missing', '{"kind": "execution.completed"}', 'line 7: "payload" is required with "kind"'],
    ['payload an array', '{"kind": "x", "payload": []}', 'line 7: "payload" must be an object, got an array'],
    ['payload null', '{"kind": "x", "payload": null}', 'line 7: "payload" must be an object, got null'],
    ['text not a string', '{"text": ["a"]}', 'line 7: "text" must be a string, got an array'],
    ['exit_code a string', '{"text": "t", "exit_code": "1"}', 'line 7: "exit_code" must be an integer, got the string "1"'],
    ['exit_code a float', '{"text": "t", "exit_code": 1.5}', 'line 7: "exit_code" must be an integer, got number 1.5'],
    ['exit_code a boolean', '{"text": "t", "exit_code": true}', 'line 7: "exit_code" must be an integer, got boolean true'],
  ];
  for (const [name, line, expected] of rows) {
    test(name, () => {
      const out = classifyLine(line, 7);
      assert.deepEqual(Object.keys(out), ['error']);
      assert.ok((out as { error: string }).error.startsWith(expected), (out as { error: string }).error);
    });
  }

  test('the line number is the one passed in', () => {
    assert.deepEqual(classifyLine('[]', 12345), { error: 'line 12345: expected a JSON object, got an array' });
  });
});

describe('runClassify: JSONL streams', () => {
  const collect = async (chunks: Array<string | Buffer>) => {
    const { Readable, PassThrough } = await import('node:stream');
    const { runClassify } = await import('../src/cli/classify.ts');
    const out = new PassThrough();
    const parts: Buffer[] = [];
    out.on('data', (c: Buffer) => parts.push(c));
    const code = await runClassify(Readable.from(chunks), out);
    out.end();
    return {
      code,
      lines: Buffer.concat(parts)
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== ''),
    };
  };

  test('one result per line, in order; malformed lines get an error and the stream goes on', async () => {
    const { code, lines } = await collect([
      '{"text":"ValueError: x","exit_code":1}\n{"te',
      'xt":"warning: w"}\r\nnot json\n\n',
      Buffer.from('{"kind":"tool.result","payload":{"type":"tool_result","status":"skipped","reason":"r"}}'),
    ]);
    assert.equal(code, 0);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(parsed.length, 5);
    assert.equal(parsed[0]!.signature, 'ValueError: x');
    assert.equal(parsed[1]!.classification, 'StderrWarning');
    assert.match(String(parsed[2]!.error), /^line 3: not valid JSON/);
    assert.match(String(parsed[3]!.error), /^line 4: empty line/);
    assert.deepEqual(parsed[4], { classification: 'SkippedPeerCall', signature: null, fingerprint: null, reason: 'r' });
  });

  test('a line split across many chunks is classified whole', async () => {
    const line = JSON.stringify({ text: 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nKeyError: \'k\'', exit_code: 1 }) + '\n';
    const { lines } = await collect(line.split('').map((c) => Buffer.from(c)));
    assert.equal((JSON.parse(lines[0]!) as { signature: string }).signature, "KeyError: 'k'");
  });
});
