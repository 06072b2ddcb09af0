/**
 * `rules: reference` is the seed, exactly: DESIGN 3.1's rules, one table row per rule and per odd
 * part (see the module comment of src/processors/classify/reference.ts), and the seed's identity
 * rules (operation, workspace, revision resolution, the zero window) through the real classify and
 * recurrence operators. test/classify-reference-parity.test.ts holds the port against an
 * independent transcription on random inputs.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { of } from 'rxjs';
import type { AgentEvent, Classification } from '../src/model/event.ts';
import { UNKNOWN_REVISION, UNRESOLVED_REVISION } from '../src/model/identity.ts';
import { isOccurrenceEvent } from '../src/model/work.ts';
import { diagnose } from '../src/processors/classify/classify.ts';
import { classify } from '../src/processors/classify/operator.ts';
import { classifyReference, isReferenceWarning, referenceSignature } from '../src/processors/classify/reference.ts';
import { newWorkPage, type WorkPage } from '../src/processors/page.ts';
import { recurrence, type RecurrenceOptions } from '../src/processors/recurrence/operator.ts';
import type { LogEntry } from '../src/store/types.ts';
import { mapState } from './helpers/pages.ts';

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
    [
      'traceback: trailing blank lines and CRLF skipped',
      'Traceback (most recent call last):\r\n  File "x.py", line 1\r\nOSError: boom\r\n\r\n  \r\n',
      'OSError: boom',
    ],
    [
      'traceback: the last non-empty line whatever it says',
      'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nKeyboardInterrupt\n',
      'KeyboardInterrupt',
    ],
    ['traceback: lines after the exception still win (last line)', 'Traceback (most recent call last):\n  File "x.py"\nValueError: v\nexiting now', 'exiting now'],
    ['traceback: indented header counts', '   Traceback (most recent call last):\n  File "x.py"\nNameError: name y', 'NameError: name y'],
    ['traceback: contained in a log line counts', 'log: Traceback (most recent call last):\nstill going\ndone', 'done'],
    [
      'traceback: an exception group header contains it',
      '  + Exception Group Traceback (most recent call last):\n  | ExceptionGroup: e (1 sub-exception)\n  +-+---- 1 ----\n    | ValueError: v\n    +------------------------------------',
      '+------------------------------------',
    ],
    ['traceback: the header needs its colon', 'Traceback (most recent call last)\nValueError: first\nlast', 'ValueError: first'],
    ['traceback: the last line wins even when it is blank-padded with U+0085', 'Traceback (most recent call last):\nValueError: v\n\u0085', 'ValueError: v'],
    ['traceback header is case-sensitive', 'traceback (most recent call last):\nfoo\nValueError: first\nbar', 'ValueError: first'],
    ['first line whose head ends with Error', 'starting\nValueError: bad value\nTypeError: later', 'ValueError: bad value'],
    ['first line whose head ends with Exception', 'java.lang.IllegalStateException: boom\n\tat Foo.bar(Foo.java:3)', 'java.lang.IllegalStateException: boom'],
    ['a line without a colon has no head', 'Exception in thread "main" java.lang.NullPointerException\n\tat Main.main(Main.java:5)', ''],
    ['bare Error line has no head', 'Error', ''],
    ['bare KeyError line has no head', 'KeyError\nValueError: later', 'ValueError: later'],
    ['the head ends at the first colon', 'note: ValueError: inner', ''],
    ['a colon at the start gives an empty head', ': Error', ''],
    ['Error suffix is case-sensitive (lowercase error suffix)', 'an unhandled error: something', ''],
    ['Exception suffix is case-sensitive', 'Unhandled exception: boom', ''],
    ['head equals error, case-insensitive', 'ERROR: disk full', 'ERROR: disk full'],
    [
      'head equals fatal (git)',
      'fatal: not a git repository (or any of the parent directories): .git',
      'fatal: not a git repository (or any of the parent directories): .git',
    ],
    [
      'head equals panic (Go), first line only',
      'panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:',
      'panic: runtime error: index out of range [5] with length 3',
    ],
    ['head equals Fatal, mixed case', 'Fatal: cannot continue', 'Fatal: cannot continue'],
    ['line starting error:', 'error: linker failed', 'error: linker failed'],
    ['the head is not trimmed before the colon', '  error  : spaced out', ''],
    ['a type head with a space before the colon is no head', 'ValueError : x', ''],
    ['a Warning head is not an error', 'DeprecationWarning: x is deprecated', ''],
    ['ErrorWarning head ends with Warning: not an error', 'ResourceErrorWarning: careful', ''],
    ['warning lines skipped, first error line wins', 'UserWarning: something\nRuntimeError: real one', 'RuntimeError: real one'],
    ['leading indentation trimmed', '    at first\n    TypeError: x is not a function', 'TypeError: x is not a function'],
    [
      'Node.js stack: the error line, not the frames',
      "/app/x.js:3\n  foo.bar();\n      ^\n\nTypeError: Cannot read properties of undefined (reading 'bar')\n    at Object.<anonymous> (/app/x.js:3:7)",
      "TypeError: Cannot read properties of undefined (reading 'bar')",
    ],
    ['whitespace collapsed', 'ValueError:   too\t\tmany    spaces  ', 'ValueError: too many spaces'],
    ['cut to 96 characters', LONG_97, LONG_97.slice(0, 96)],
    ['collapse happens before the cut', 'ValueError:' + ' '.repeat(50) + 'y'.repeat(100), ('ValueError: ' + 'y'.repeat(100)).slice(0, 96)],
    ['a cut ending in a space keeps it', 'ValueError: ' + 'a'.repeat(83) + ' tail-after-96', 'ValueError: ' + 'a'.repeat(83) + ' '],
    ['the cut counts code points, never splits a pair', 'ValueError: ' + '😀'.repeat(100), 'ValueError: ' + '😀'.repeat(84)],
    ['gcc file:line:col: error is beyond the reference', "main.c:3:5: error: expected ';' before '}' token", ''],
    ['rustc error[E0308] is beyond the reference', 'error[E0308]: mismatched types', ''],
    ['lines split on \\r\\n', 'progress\r\nValueError: v\r\n', 'ValueError: v'],
    ['a lone \\r splits nothing: the progress line and the error are one line', 'loading 50%\rValueError: v', 'loading 50% ValueError: v'],
    ['a lone \\r splits nothing: a head before the \\r hides the error', 'step: 1\rValueError: v', ''],
    ['a lone \\r after the error line stays in the signature, collapsed', 'ValueError: v\rdone', 'ValueError: v done'],
    ['U+0085 (NEL) is whitespace, as in Rust', 'ValueError:\u0085\u0085x', 'ValueError: x'],
    ['U+FEFF (BOM) is not whitespace, as in Rust', '\ufeffValueError: x', '\ufeffValueError: x'],
    ['U+00A0 is whitespace', 'ValueError:\u00a0x', 'ValueError: x'],
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
    ['head ends with warning', 'emitted a ResourceWarning: careful', true],
    ['a line without a colon has no head (no warning)', 'emitted a ResourceWarning', false],
    ['the head is not trimmed (no warning)', 'Warning : spaced', false],
    ['contains warning: mid-line, any case', 'x: WARNING: y', true],
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
    {
      name: 'error state: traceback signature',
      kind: 'execution.completed',
      payload: failed(PY311_ZERO_DIVISION),
      classification: 'ExecutionFailure',
      signature: 'ZeroDivisionError: division by zero',
    },
    {
      name: 'error state: first error line',
      kind: 'execution.completed',
      payload: failed('compiling\nSyntaxError: invalid syntax'),
      classification: 'ExecutionFailure',
      signature: 'SyntaxError: invalid syntax',
    },
    {
      name: 'error state: no signature → first non-empty line',
      kind: 'execution.completed',
      payload: failed('\n\n  something   went\twrong  \nmore'),
      classification: 'ExecutionFailure',
      signature: 'something went wrong',
    },
    {
      name: 'error state: first-line fallback cut to 96',
      kind: 'execution.completed',
      payload: failed('z'.repeat(300)),
      classification: 'ExecutionFailure',
      signature: 'z'.repeat(96),
    },
    {
      name: 'error state: empty error → ExecutionError',
      kind: 'execution.completed',
      payload: failed(''),
      classification: 'ExecutionFailure',
      signature: 'ExecutionError',
    },
    {
      name: 'error state: blank error → ExecutionError',
      kind: 'execution.completed',
      payload: failed(' \n\t'),
      classification: 'ExecutionFailure',
      signature: 'ExecutionError',
    },
    {
      name: 'error state: no outcome → ExecutionError',
      kind: 'execution.completed',
      payload: { state: 'error' },
      classification: 'ExecutionFailure',
      signature: 'ExecutionError',
    },
    {
      name: 'error state: non-string error → ExecutionError',
      kind: 'execution.completed',
      payload: failed(42),
      classification: 'ExecutionFailure',
      signature: 'ExecutionError',
    },
    {
      name: 'error state: a list is no text → ExecutionError',
      kind: 'execution.completed',
      payload: failed(['Traceback (most recent call last):', '  File "x"', 'OSError: gone']),
      classification: 'ExecutionFailure',
      signature: 'ExecutionError',
    },
    {
      name: 'error state: first-line fallback keeps the space the cut leaves',
      kind: 'execution.completed',
      payload: failed('w'.repeat(95) + ' tail'),
      classification: 'ExecutionFailure',
      signature: 'w'.repeat(95) + ' ',
    },
    {
      name: 'error state wins over stderr output',
      kind: 'execution.completed',
      payload: { state: 'error', outcome: { error: 'KeyError: k', output: [stderr('warning: w')] } },
      classification: 'ExecutionFailure',
      signature: 'KeyError: k',
    },
    // execution.completed, otherwise: the first non-empty stderr item
    {
      name: 'stderr with an error → RecoveredError',
      kind: 'execution.completed',
      payload: ok(stdout('hi'), stderr('ValueError: handled')),
      classification: 'RecoveredError',
      signature: 'ValueError: handled',
    },
    {
      name: 'stderr traceback → RecoveredError with last line',
      kind: 'execution.completed',
      payload: ok(stderr(PY311_ZERO_DIVISION)),
      classification: 'RecoveredError',
      signature: 'ZeroDivisionError: division by zero',
    },
    {
      name: 'an item is stderr by its name only ({stream: "stderr"} is not)',
      kind: 'execution.completed',
      payload: ok({ stream: 'stderr', text: 'fatal: bad object' }),
      classification: 'NormalOutput',
      signature: null,
    },
    {
      name: 'a stderr text that is a list is no text (skipped)',
      kind: 'execution.completed',
      payload: ok(stderr(['Value', 'Error: split\n'])),
      classification: 'NormalOutput',
      signature: null,
    },
    {
      name: 'any output_type counts when the name is stderr',
      kind: 'execution.completed',
      payload: ok({ output_type: 'display_data', name: 'stderr', text: 'KeyError: k' }),
      classification: 'RecoveredError',
      signature: 'KeyError: k',
    },
    {
      name: 'stderr warning → StderrWarning',
      kind: 'execution.completed',
      payload: ok(stderr("/x.py:1: DeprecationWarning: 'a' is deprecated")),
      classification: 'StderrWarning',
      signature: null,
    },
    {
      name: 'stderr with error and warning → RecoveredError',
      kind: 'execution.completed',
      payload: ok(stderr('warning: first\nRuntimeError: second')),
      classification: 'RecoveredError',
      signature: 'RuntimeError: second',
    },
    { name: 'stderr other text → Uncertain', kind: 'execution.completed', payload: ok(stderr('progress: 50%')), classification: 'Uncertain', signature: null },
    {
      name: 'blank stderr items are skipped',
      kind: 'execution.completed',
      payload: ok(stderr(''), stderr('  \n'), stderr('KeyError: x')),
      classification: 'RecoveredError',
      signature: 'KeyError: x',
    },
    {
      name: 'the first non-empty stderr item decides',
      kind: 'execution.completed',
      payload: ok(stderr('loading...'), stderr('RuntimeError: later')),
      classification: 'Uncertain',
      signature: null,
    },
    {
      name: 'stdout errors do not count → NormalOutput',
      kind: 'execution.completed',
      payload: ok(stdout('ValueError: printed')),
      classification: 'NormalOutput',
      signature: null,
    },
    { name: 'no stderr → NormalOutput', kind: 'execution.completed', payload: ok(), classification: 'NormalOutput', signature: null },
    { name: 'no output list → NormalOutput', kind: 'execution.completed', payload: { state: 'ok' }, classification: 'NormalOutput', signature: null },
    {
      name: 'state is compared exactly ("ERROR" is not "error")',
      kind: 'execution.completed',
      payload: { state: 'ERROR', outcome: { error: 'ValueError: v' } },
      classification: 'NormalOutput',
      signature: null,
    },
    // tool results
    {
      name: 'tool.result skipped → SkippedPeerCall with reason',
      kind: 'tool.result',
      payload: tool({ status: 'skipped', reason: 'peer call already running' }),
      classification: 'SkippedPeerCall',
      signature: null,
      reason: 'peer call already running',
    },
    { name: 'scratchpad skipped without reason', kind: 'scratchpad', payload: tool({ status: 'skipped' }), classification: 'SkippedPeerCall', signature: null },
    {
      name: 'skipped with a non-string reason keeps none',
      kind: 'tool.result',
      payload: tool({ status: 'skipped', reason: { code: 1 } }),
      classification: 'SkippedPeerCall',
      signature: null,
    },
    {
      name: 'tool.result error: signature of payload.error',
      kind: 'tool.result',
      payload: tool({ status: 'error', error: 'PermissionError: denied', content: 'TypeError: not this' }),
      classification: 'ExecutionFailure',
      signature: 'PermissionError: denied',
    },
    {
      name: 'scratchpad error: signature of payload.content',
      kind: 'scratchpad',
      payload: tool({ status: 'error', content: 'running\nFileNotFoundError: nope' }),
      classification: 'ExecutionFailure',
      signature: 'FileNotFoundError: nope',
    },
    {
      name: 'tool error: a blank error string is the text → ToolError',
      kind: 'tool.result',
      payload: tool({ status: 'error', error: '  ', content: 'OSError: disk' }),
      classification: 'ExecutionFailure',
      signature: 'ToolError',
    },
    {
      name: 'tool error: an empty error string is the text → ToolError',
      kind: 'scratchpad',
      payload: tool({ status: 'error', error: '', content: 'OSError: disk' }),
      classification: 'ExecutionFailure',
      signature: 'ToolError',
    },
    {
      name: 'tool error: a non-string error falls to content',
      kind: 'tool.result',
      payload: tool({ status: 'error', error: null, content: 'OSError: disk' }),
      classification: 'ExecutionFailure',
      signature: 'OSError: disk',
    },
    {
      name: 'tool error: error text without signature → its first line',
      kind: 'tool.result',
      payload: tool({ status: 'error', error: '\ncommand timed out\nafter 30s', content: 'ValueError: ignored' }),
      classification: 'ExecutionFailure',
      signature: 'command timed out',
    },
    {
      name: 'tool error: content blocks are no text → ToolError',
      kind: 'tool.result',
      payload: tool({
        status: 'error',
        content: [
          { type: 'text', text: 'exit 1' },
          { type: 'text', text: 'ModuleNotFoundError: no module' },
        ],
      }),
      classification: 'ExecutionFailure',
      signature: 'ToolError',
    },
    { name: 'tool error: nothing → ToolError', kind: 'tool.result', payload: tool({ status: 'error' }), classification: 'ExecutionFailure', signature: 'ToolError' },
    {
      name: 'tool error: non-string fields → ToolError',
      kind: 'scratchpad',
      payload: tool({ status: 'error', error: 7, content: { a: 1 } }),
      classification: 'ExecutionFailure',
      signature: 'ToolError',
    },
    {
      name: 'tool ok → NormalOutput',
      kind: 'tool.result',
      payload: tool({ status: 'ok', content: 'ValueError: in output' }),
      classification: 'NormalOutput',
      signature: null,
    },
    {
      name: 'tool.result of another type → NormalOutput',
      kind: 'tool.result',
      payload: { type: 'tool_call', status: 'error', error: 'ValueError: x' },
      classification: 'NormalOutput',
      signature: null,
    },
    {
      name: 'scratchpad without type → NormalOutput',
      kind: 'scratchpad',
      payload: { status: 'skipped', reason: 'r' },
      classification: 'NormalOutput',
      signature: null,
    },
    {
      name: 'tool_result under another kind → NormalOutput',
      kind: 'tool.call',
      payload: tool({ status: 'error', error: 'ValueError: x' }),
      classification: 'NormalOutput',
      signature: null,
    },
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

// ---------------------------------------------------------------------------------------------
// The seed's identity: operation, workspace, revision and the zero window, through the real
// classify (rules: reference) and recurrence operators.

interface SeedEvent {
  kind?: string;
  payload?: Record<string, unknown>;
  executionId?: string;
  revision?: string;
  operation?: string;
  time?: number;
}

let seq = 0;
function seedPage(events: SeedEvent[]): WorkPage {
  const entries: LogEntry[] = events.map((e) => {
    const event: AgentEvent = {
      eventId: `seed-${++seq}`,
      kind: e.kind ?? 'execution.completed',
      payload: e.payload ?? failed('KeyError: k'),
      partition: 's',
      time: e.time ?? 0,
      service: 'agent',
      source: 'jsonl',
    };
    if (e.executionId) event.executionId = e.executionId;
    if (e.revision) event.revision = e.revision;
    if (e.operation) event.operation = e.operation;
    return { id: String(seq), event };
  });
  return newWorkPage('logs', 's', entries);
}

/** Runs pages through classify (reference) and recurrence; returns the occurrences and the warnings. */
function throughSeed(pages: WorkPage[], policy: Partial<RecurrenceOptions> = {}, stored: Record<string, string> = {}) {
  const state = mapState();
  for (const [k, v] of Object.entries(stored)) state.revisions.set(k, v);
  const warnings: string[] = [];
  const out: WorkPage[] = [];
  const chain = (p: WorkPage) =>
    of(p).pipe(
      classify({ rules: 'reference' }),
      recurrence(
        { minRecurrence: 2, groupingWindow: 60_000, maxPerTurn: 5, scope: 'service', ...policy },
        {
          loadGroups: (keys) => of(state.pick(state.groups, keys)),
          loadTurns: (_p, ids) => of(state.pick(state.turns, ids)),
          lookupRevisions: (ids) => of(state.pick(state.revisions, ids)),
        },
        { onUnresolvedRevision: (id) => warnings.push(id) },
      ),
    );
  for (const p of pages) {
    chain(p).subscribe((x) => {
      state.apply(x.commit);
      out.push(x);
    });
  }
  const occurrences = out.flatMap((p) => p.items.filter((i) => i.occurrence).map((i) => ({ ...i.occurrence!, diagnosis: i.diagnosis! })));
  const events = out.flatMap((p) => p.commit.outbox.flatMap((o) => (o.kind === 'work' && isOccurrenceEvent(o.event) ? [o.event] : [])));
  return { occurrences, warnings, events };
}

describe('the seed identity (rules: reference)', () => {
  test('operation: cell.execution for executions, tool.execution for tool results — two groups for one signature', () => {
    const { occurrences, events } = throughSeed([
      seedPage([
        { payload: failed('KeyError: k'), operation: 'span-name' },
        { kind: 'tool.result', payload: tool({ status: 'error', error: 'KeyError: k' }) },
        { kind: 'scratchpad', payload: tool({ status: 'error', error: 'KeyError: k' }) },
        { payload: ok(stderr('KeyError: k')) },
      ]),
    ]);
    assert.deepEqual(
      occurrences.map((o) => o.operation),
      ['cell.execution', 'tool.execution', 'tool.execution', 'cell.execution'],
    );
    assert.equal(new Set(occurrences.map((o) => o.diagnosis.fingerprint)).size, 1, 'one signature, one fingerprint');
    assert.notEqual(occurrences[0]!.groupKey, occurrences[1]!.groupKey);
    assert.equal(occurrences[1]!.groupKey, occurrences[2]!.groupKey);
    assert.equal(occurrences[0]!.groupKey, occurrences[3]!.groupKey);
    assert.deepEqual(
      events.map((e) => e.data.operation),
      ['tool.execution', 'cell.execution'],
    );
  });

  test('workspace: payload.workspace, else workspace_path, is part of the group', () => {
    const { occurrences } = throughSeed([
      seedPage([
        { payload: { ...failed('KeyError: k'), workspace: '/w/a' } },
        { payload: { ...failed('KeyError: k'), workspace_path: '/w/a' } },
        { payload: { ...failed('KeyError: k'), workspace: '/w/b', workspace_path: '/w/a' } },
        { payload: failed('KeyError: k') },
        { payload: { ...failed('KeyError: k'), workspace: '' } },
      ]),
    ]);
    assert.deepEqual(
      occurrences.map((o) => o.diagnosis.identity),
      [
        { rules: 'reference', operation: 'cell.execution', workspace: '/w/a' },
        { rules: 'reference', operation: 'cell.execution', workspace: '/w/a' },
        { rules: 'reference', operation: 'cell.execution', workspace: '/w/b' },
        { rules: 'reference', operation: 'cell.execution' },
        { rules: 'reference', operation: 'cell.execution' },
      ],
    );
    const keys = occurrences.map((o) => o.groupKey);
    assert.equal(keys[0], keys[1]);
    assert.notEqual(keys[0], keys[2]);
    assert.notEqual(keys[0], keys[3]);
    assert.equal(keys[3], keys[4]);
  });

  test('non-failures carry no identity', () => {
    const d = diagnose(
      { eventId: 'e', kind: 'execution.completed', payload: ok(stderr('warning: w')), partition: 's', time: 0, service: 'x', source: 'jsonl' },
      'reference',
    );
    assert.equal(d.identity, undefined);
    const v = diagnose(
      { eventId: 'e', kind: 'execution.completed', payload: failed('KeyError: k'), partition: 's', time: 0, service: 'x', source: 'jsonl' },
      'vigil',
    );
    assert.equal(v.identity, undefined, 'rules: vigil keeps the record-named operation');
  });

  const started = (executionId: string, revision: string): SeedEvent => ({ kind: 'execution.started', executionId, payload: { revision } });
  const revisionRows: Array<[name: string, pages: SeedEvent[][], stored: Record<string, string>, expected: string[], warned: string[]]> = [
    ['an execution.started earlier in the page', [[started('x', 'r-page'), { executionId: 'x' }]], {}, ['r-page'], []],
    [
      'an execution.started later in the same page counts (the cache is built from the whole page first)',
      [[{ executionId: 'x' }, started('x', 'r-later')]],
      {},
      ['r-later'],
      [],
    ],
    ['the page before the store', [[started('x', 'r-page'), { executionId: 'x' }]], { x: 'r-store' }, ['r-page'], []],
    [
      'the store (an earlier page) before the payload',
      [[started('x', 'r-1')], [{ executionId: 'x', payload: { ...failed('KeyError: k'), revision: 'r-payload' } }]],
      {},
      ['r-1'],
      [],
    ],
    ['the payload before unresolved', [[{ executionId: 'x', payload: { ...failed('KeyError: k'), revision: 'r-payload' } }]], {}, ['r-payload'], []],
    [
      'an execution id without a revision: unresolved_revision (not the resource version), with a warning',
      [[{ executionId: 'x', revision: 'r-resource' }]],
      {},
      [UNRESOLVED_REVISION],
      ['x'],
    ],
    ['no execution id: the configured fallback (the resource version)', [[{ revision: 'r-resource' }]], {}, ['r-resource'], []],
    ['no execution id, no fallback: unknown', [[{}]], {}, [UNKNOWN_REVISION], []],
    ['payload.execution_id counts as the execution id', [[{ payload: { ...failed('KeyError: k'), execution_id: 'y' } }, started('y', 'r-y')]], {}, ['r-y'], []],
    ['one warning per execution id and page', [[{ executionId: 'z' }, { executionId: 'z' }]], {}, [UNRESOLVED_REVISION, UNRESOLVED_REVISION], ['z']],
  ];
  for (const [name, pages, stored, expected, warned] of revisionRows) {
    test(`revision: ${name}`, () => {
      const { occurrences, warnings } = throughSeed(pages.map(seedPage), {}, stored);
      assert.deepEqual(
        occurrences.map((o) => o.revision),
        expected,
      );
      assert.deepEqual(warnings, warned);
    });
  }

  test('rules: vigil keeps DESIGN 3.3 order: only an earlier execution.started, the resource version before unresolved', () => {
    const page = seedPage([{ executionId: 'x' }, started('x', 'r-later'), { executionId: 'w', revision: 'r-resource' }]);
    const state = mapState();
    let occ: string[] = [];
    of(page)
      .pipe(
        classify({ rules: 'vigil' }),
        recurrence(
          { minRecurrence: 2, groupingWindow: 60_000, maxPerTurn: 5, scope: 'service' },
          { loadGroups: () => of(new Map()), loadTurns: () => of(new Map()), lookupRevisions: (ids) => of(state.pick(state.revisions, ids)) },
        ),
      )
      .subscribe((p) => (occ = p.items.flatMap((i) => (i.occurrence ? [i.occurrence.revision] : []))));
    assert.deepEqual(occ, [UNRESOLVED_REVISION, 'r-resource']);
  });

  test('grouping_window 0: a repeat at the same instant is chronic, never a burst', () => {
    const { occurrences } = throughSeed([seedPage([{ time: 5 }, { time: 5 }, { time: 6 }])], { groupingWindow: 0 });
    assert.deepEqual(
      occurrences.map((o) => o.decision),
      ['BurstCoalesced', 'ChronicRecurrence', 'ChronicRecurrence'],
    );
  });
});
