/**
 * DESIGN 3.1's reference rules, one table row per rule (and per decision where the text is
 * ambiguous; see the module comment of src/processors/classify/reference.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Classification } from '../src/model/event.ts';
import { classifyReference, isReferenceWarning, referenceSignature } from '../src/processors/classify/reference.ts';

// A real CPython 3.11 traceback (python3.11 /tmp/div.py).
const PY311_ZERO_DIVISION = [
  'Traceback (most recent call last):',
  '  File "/tmp/div.py", line 5, in <module>',
  '    main()',
  '  File "/tmp/div.py", line 2, in main',
  '    return 1 / 0',
  '           ~~^~~',
  'ZeroDivisionError: division by zero',
  '',
].join('\n');

const PY_CHAINED = [
  'Traceback (most recent call last):',
  '  File "app.py", line 3, in load',
  '    return cfg["port"]',
  "KeyError: 'port'",
  '',
  'During handling of the above exception, another exception occurred:',
  '',
  'Traceback (most recent call last):',
  '  File "app.py", line 9, in <module>',
  '    load()',
  "RuntimeError: config is missing 'port'",
].join('\n');

const LONG_97 = 'ValueError: ' + 'x'.repeat(200);

describe('referenceSignature', () => {
  const rows: Array<[name: string, text: string, expected: string]> = [
    ['empty text is empty', '', ''],
    ['blank text is empty', '  \n\t\n ', ''],
    ['text naming no error is empty', 'collecting data\nprocessed 10 rows', ''],
    ['Python 3.11 traceback yields its last line', PY311_ZERO_DIVISION, 'ZeroDivisionError: division by zero'],
    ['chained traceback yields the final exception', PY_CHAINED, "RuntimeError: config is missing 'port'"],
    ['traceback: trailing blank lines and CRLF skipped', 'Traceback (most recent call last):\r\n  File "x.py", line 1\r\nOSError: boom\r\n\r\n  \r\n', 'OSError: boom'],
    ['traceback: the last non-empty line whatever it says', 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nKeyboardInterrupt\n', 'KeyboardInterrupt'],
    ['traceback: lines after the exception still win (last line)', 'Traceback (most recent call last):\n  File "x.py"\nValueError: v\nexiting now', 'exiting now'],
    ['traceback: indented header counts (lines are trimmed)', '   Traceback (most recent call last):\n  File "x.py"\nNameError: name y', 'NameError: name y'],
    ['traceback header is case-sensitive', 'traceback (most recent call last):\nfoo\nValueError: first\nbar', 'ValueError: first'],
    ['first line whose head ends with Error', 'starting\nValueError: bad value\nTypeError: later', 'ValueError: bad value'],
    ['first line whose head ends with Exception', 'java.lang.IllegalStateException: boom\n\tat Foo.bar(Foo.java:3)', 'java.lang.IllegalStateException: boom'],
    ['no colon: the whole line is the head', 'Exception in thread "main" java.lang.NullPointerException\n\tat Main.main(Main.java:5)', 'Exception in thread "main" java.lang.NullPointerException'],
    ['bare Error line', 'Error', 'Error'],
    ['Error suffix is case-sensitive (lowercase error suffix)', 'an unhandled error: something', ''],
    ['Exception suffix is case-sensitive', 'Unhandled exception: boom', ''],
    ['head equals error, case-insensitive', 'ERROR: disk full', 'ERROR: disk full'],
    ['head equals fatal (git)', 'fatal: not a git repository (or any of the parent directories): .git', 'fatal: not a git repository (or any of the parent directories): .git'],
    ['head equals panic (Go), first line only', 'panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:', 'panic: runtime error: index out of range [5] with length 3'],
    ['head equals Fatal, mixed case', 'Fatal: cannot continue', 'Fatal: cannot continue'],
    ['line starting error:', 'error: linker failed', 'error: linker failed'],
    ['head is trimmed before the colon', '  error  : spaced out', 'error : spaced out'],
    ['a Warning head is not an error', 'DeprecationWarning: x is deprecated', ''],
    ['ErrorWarning head ends with Warning: not an error', 'ResourceErrorWarning: careful', ''],
    ['warning lines skipped, first error line wins', 'UserWarning: something\nRuntimeError: real one', 'RuntimeError: real one'],
    ['leading indentation trimmed', '    at first\n    TypeError: x is not a function', 'TypeError: x is not a function'],
    ['Node.js stack: the error line, not the frames', "/app/x.js:3\n  foo.bar();\n      ^\n\nTypeError: Cannot read properties of undefined (reading 'bar')\n    at Object.<anonymous> (/app/x.js:3:7)", "TypeError: Cannot read properties of undefined (reading 'bar')"],
    ['whitespace collapsed', 'ValueError:   too\t\tmany    spaces  ', 'ValueError: too many spaces'],
    ['cut to 96 characters', LONG_97, LONG_97.slice(0, 96)],
    ['collapse happens before the cut', 'ValueError:' + ' '.repeat(50) + 'y'.repeat(100), ('ValueError: ' + 'y'.repeat(100)).slice(0, 96)],
    ['a cut ending in a space drops it', 'ValueError: ' + 'a'.repeat(83) + ' tail-after-96', 'ValueError: ' + 'a'.repeat(83)],
    ['the cut counts code points, never splits a pair', 'ValueError: ' + '😀'.repeat(100), 'ValueError: ' + '😀'.repeat(84)],
    ['gcc file:line:col: error is beyond the reference', "main.c:3:5: error: expected ';' before '}' token", ''],
    ['rustc error[E0308] is beyond the reference', 'error[E0308]: mismatched types', ''],
  ];
  for (const [name, text, expected] of rows) {
    test(name, () => assert.equal(referenceSignature(text), expected));
  }
});

describe('isReferenceWarning', () => {
  const rows: Array<[name: string, text: string, expected: boolean]> = [
    ['starts warning:', 'warning: unused variable `x`', true],
    ['starts WARNING: (case-insensitive)', 'WARNING: low memory', true],
    ['starts warn:', 'warn: deprecated option', true],
    ['starts [warning]', '[warning] slow query', true],
    ['starts [WARNING]', '[WARNING] slow query', true],
    ['contains warning:', '/app/x.py:3: note, warning: check this', true],
    ['contains userwarning: (Python warnings.warn)', "/app/x.py:3: UserWarning: feature 'a' is experimental", true],
    ['contains deprecationwarning:', '/lib/y.py:10: DeprecationWarning: use z', true],
    ['contains syntaxwarning:', '<stdin>:1: SyntaxWarning: invalid escape sequence', true],
    ['contains runtimewarning:', 'x.py:2: RuntimeWarning: overflow encountered', true],
    ['contains futurewarning:', 'x.py:2: FutureWarning: the default will change', true],
    ['head ends with warning (no colon: whole line)', 'emitted a ResourceWarning', true],
    ['head ends with warning before a spaced colon', 'Warning : spaced', true],
    ['a later line is a warning', 'step 1 ok\nstep 2 ok\nwarn: step 3 slow', true],
    ['indented warning line (trimmed)', '    warning: indented', true],
    ['plain text is no warning', 'all good', false],
    ['empty text is no warning', '', false],
    ['warnings word without the forms', 'warnings were emitted', false],
    ['npm warn without a colon', 'npm warn deprecated inflight@1.0.6', false],
  ];
  for (const [name, text, expected] of rows) {
    test(name, () => assert.equal(isReferenceWarning(text), expected));
  }
});

interface EventRow {
  name: string;
  kind: string;
  payload: unknown;
  classification: Classification;
  signature: string | null;
  reason?: string;
}

const stderr = (text: unknown) => ({ output_type: 'stream', name: 'stderr', text });
const stdout = (text: unknown) => ({ output_type: 'stream', name: 'stdout', text });
const ok = (...output: unknown[]) => ({ state: 'ok', outcome: { output } });
const failed = (error: unknown) => ({ state: 'error', outcome: { error } });
const tool = (fields: Record<string, unknown>) => ({ type: 'tool_result', ...fields });

describe('classifyReference', () => {
  const rows: EventRow[] = [
    // execution.completed, state error
    { name: 'error state: traceback signature', kind: 'execution.completed', payload: failed(PY311_ZERO_DIVISION), classification: 'ExecutionFailure', signature: 'ZeroDivisionError: division by zero' },
    { name: 'error state: first error line', kind: 'execution.completed', payload: failed('compiling\nSyntaxError: invalid syntax'), classification: 'ExecutionFailure', signature: 'SyntaxError: invalid syntax' },
    { name: 'error state: no signature → first non-empty line', kind: 'execution.completed', payload: failed('\n\n  something   went\twrong  \nmore'), classification: 'ExecutionFailure', signature: 'something went wrong' },
    { name: 'error state: first-line fallback cut to 96', kind: 'execution.completed', payload: failed('z'.repeat(300)), classification: 'ExecutionFailure', signature: 'z'.repeat(96) },
    { name: 'error state: empty error → ExecutionError', kind: 'execution.completed', payload: failed(''), classification: 'ExecutionFailure', signature: 'ExecutionError' },
    { name: 'error state: blank error → ExecutionError', kind: 'execution.completed', payload: failed(' \n\t'), classification: 'ExecutionFailure', signature: 'ExecutionError' },
    { name: 'error state: no outcome → ExecutionError', kind: 'execution.completed', payload: { state: 'error' }, classification: 'ExecutionFailure', signature: 'ExecutionError' },
    { name: 'error state: non-string error → ExecutionError', kind: 'execution.completed', payload: failed(42), classification: 'ExecutionFailure', signature: 'ExecutionError' },
    { name: 'error state: list of lines joined with newlines', kind: 'execution.completed', payload: failed(['Traceback (most recent call last):', '  File "x"', 'OSError: gone']), classification: 'ExecutionFailure', signature: 'OSError: gone' },
    { name: 'error state wins over stderr output', kind: 'execution.completed', payload: { state: 'error', outcome: { error: 'KeyError: k', output: [stderr('warning: w')] } }, classification: 'ExecutionFailure', signature: 'KeyError: k' },
    // execution.completed, otherwise: the first non-empty stderr item
    { name: 'stderr with an error → RecoveredError', kind: 'execution.completed', payload: ok(stdout('hi'), stderr('ValueError: handled')), classification: 'RecoveredError', signature: 'ValueError: handled' },
    { name: 'stderr traceback → RecoveredError with last line', kind: 'execution.completed', payload: ok(stderr(PY311_ZERO_DIVISION)), classification: 'RecoveredError', signature: 'ZeroDivisionError: division by zero' },
    { name: 'stderr item shape {stream: "stderr"}', kind: 'execution.completed', payload: ok({ stream: 'stderr', text: 'fatal: bad object' }), classification: 'RecoveredError', signature: 'fatal: bad object' },
    { name: 'stderr text as nbformat list (joined without separator)', kind: 'execution.completed', payload: ok(stderr(['Value', 'Error: split\n'])), classification: 'RecoveredError', signature: 'ValueError: split' },
    { name: 'stderr warning → StderrWarning', kind: 'execution.completed', payload: ok(stderr("/x.py:1: DeprecationWarning: 'a' is deprecated")), classification: 'StderrWarning', signature: null },
    { name: 'stderr with error and warning → RecoveredError', kind: 'execution.completed', payload: ok(stderr('warning: first\nRuntimeError: second')), classification: 'RecoveredError', signature: 'RuntimeError: second' },
    { name: 'stderr other text → Uncertain', kind: 'execution.completed', payload: ok(stderr('progress: 50%')), classification: 'Uncertain', signature: null },
    { name: 'blank stderr items are skipped', kind: 'execution.completed', payload: ok(stderr(''), stderr('  \n'), stderr('KeyError: x')), classification: 'RecoveredError', signature: 'KeyError: x' },
    { name: 'the first non-empty stderr item decides', kind: 'execution.completed', payload: ok(stderr('loading...'), stderr('RuntimeError: later')), classification: 'Uncertain', signature: null },
    { name: 'stdout errors do not count → NormalOutput', kind: 'execution.completed', payload: ok(stdout('ValueError: printed')), classification: 'NormalOutput', signature: null },
    { name: 'no stderr → NormalOutput', kind: 'execution.completed', payload: ok(), classification: 'NormalOutput', signature: null },
    { name: 'no output list → NormalOutput', kind: 'execution.completed', payload: { state: 'ok' }, classification: 'NormalOutput', signature: null },
    { name: 'state is compared exactly ("ERROR" is not "error")', kind: 'execution.completed', payload: { state: 'ERROR', outcome: { error: 'ValueError: v' } }, classification: 'NormalOutput', signature: null },
    // tool results
    { name: 'tool.result skipped → SkippedPeerCall with reason', kind: 'tool.result', payload: tool({ status: 'skipped', reason: 'peer call already running' }), classification: 'SkippedPeerCall', signature: null, reason: 'peer call already running' },
    { name: 'scratchpad skipped without reason', kind: 'scratchpad', payload: tool({ status: 'skipped' }), classification: 'SkippedPeerCall', signature: null },
    { name: 'skipped with a non-string reason keeps none', kind: 'tool.result', payload: tool({ status: 'skipped', reason: { code: 1 } }), classification: 'SkippedPeerCall', signature: null },
    { name: 'tool.result error: signature of payload.error', kind: 'tool.result', payload: tool({ status: 'error', error: 'PermissionError: denied', content: 'TypeError: not this' }), classification: 'ExecutionFailure', signature: 'PermissionError: denied' },
    { name: 'scratchpad error: signature of payload.content', kind: 'scratchpad', payload: tool({ status: 'error', content: 'running\nFileNotFoundError: nope' }), classification: 'ExecutionFailure', signature: 'FileNotFoundError: nope' },
    { name: 'tool error: blank error falls to content', kind: 'tool.result', payload: tool({ status: 'error', error: '  ', content: 'OSError: disk' }), classification: 'ExecutionFailure', signature: 'OSError: disk' },
    { name: 'tool error: error text without signature → its first line', kind: 'tool.result', payload: tool({ status: 'error', error: '\ncommand timed out\nafter 30s', content: 'ValueError: ignored' }), classification: 'ExecutionFailure', signature: 'command timed out' },
    { name: 'tool error: content blocks [{type:text}]', kind: 'tool.result', payload: tool({ status: 'error', content: [{ type: 'text', text: 'exit 1' }, { type: 'text', text: 'ModuleNotFoundError: no module' }] }), classification: 'ExecutionFailure', signature: 'ModuleNotFoundError: no module' },
    { name: 'tool error: nothing → ToolError', kind: 'tool.result', payload: tool({ status: 'error' }), classification: 'ExecutionFailure', signature: 'ToolError' },
    { name: 'tool error: non-string fields → ToolError', kind: 'scratchpad', payload: tool({ status: 'error', error: 7, content: { a: 1 } }), classification: 'ExecutionFailure', signature: 'ToolError' },
    { name: 'tool ok → NormalOutput', kind: 'tool.result', payload: tool({ status: 'ok', content: 'ValueError: in output' }), classification: 'NormalOutput', signature: null },
    { name: 'tool.result of another type → NormalOutput', kind: 'tool.result', payload: { type: 'tool_call', status: 'error', error: 'ValueError: x' }, classification: 'NormalOutput', signature: null },
    { name: 'scratchpad without type → NormalOutput', kind: 'scratchpad', payload: { status: 'skipped', reason: 'r' }, classification: 'NormalOutput', signature: null },
    { name: 'tool_result under another kind → NormalOutput', kind: 'tool.call', payload: tool({ status: 'error', error: 'ValueError: x' }), classification: 'NormalOutput', signature: null },
    // everything else
    { name: 'execution.started → NormalOutput', kind: 'execution.started', payload: { revision: 'abc' }, classification: 'NormalOutput', signature: null },
    { name: 'unknown kind → NormalOutput', kind: 'chat.message', payload: failed('ValueError: x'), classification: 'NormalOutput', signature: null },
    { name: 'null payload → NormalOutput', kind: 'execution.completed', payload: null, classification: 'NormalOutput', signature: null },
    { name: 'array payload → NormalOutput', kind: 'tool.result', payload: ['tool_result'], classification: 'NormalOutput', signature: null },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const expected: Record<string, unknown> = { classification: row.classification, signature: row.signature };
      if (row.reason !== undefined) expected.reason = row.reason;
      assert.deepEqual(classifyReference(row.kind, row.payload as Record<string, unknown>), expected);
    });
  }
});
