/** Journal test helpers: runtime error cases as the reference runtime writes them, and a separate process writing a journal. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './vigil-process.ts';

/** A case as the reference runtime serializes it (serde, every field present). */
export function referenceCase(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    case_id: '9b2f7c1e-4d7a-4f0e-9a51-2c3d4e5f6a7b',
    turn_id: 'turn-0007',
    occurred_at_ms: 1767225600123,
    error_kind: 'invalid_tool_args',
    severity: 2,
    detected_by: 'runtime_tool_executor',
    task: {
      origin: 'telegram',
      event_sources: ['telegram'],
      user_request_summary: 'telegram from alice: inspect this',
      claimed_event_ids: ['ev-1'],
      claimed_app_notices: [],
      bound_primitive_id: null,
      workflow_origin: null,
    },
    runtime: {
      phase: 'tool_execution',
      available_tool_names: ['read_file', 'finish_and_send'],
      plan_summary: ['InProgress: read the file'],
      compact_context_summary: 'user asked to inspect a file',
    },
    action: {
      assistant_text_summary: null,
      tool_call_summaries: ['read_file {"path":3}'],
      tool_result_summaries: [],
      previous_action_window: ['tool_call: read_file'],
    },
    observation: {
      expected_behavior: 'Tool calls should use available tools with valid arguments and satisfy the tool-specific runtime contract.',
      actual_behavior: 'The tool executor rejected the tool call.',
      evidence: 'invalid arguments for read_file: invalid type: integer `3`, expected a string at line 1 column 10',
      recoverability: 'tool_error_returned_to_model',
      retry_count: 0,
      terminal_status: null,
    },
    contract_refs: ['tool argument contract'],
    ...over,
  };
}

/** A case with its own words in the evidence, so every case is its own failure (group). */
const WORDS = [
  'alpha',
  'bravo',
  'charlie',
  'delta',
  'echo',
  'foxtrot',
  'golf',
  'hotel',
  'india',
  'juliet',
  'kilo',
  'lima',
  'mike',
  'november',
  'oscar',
  'papa',
  'quebec',
  'romeo',
  'sierra',
  'tango',
  'uniform',
  'victor',
  'whiskey',
  'xray',
  'yankee',
  'zulu',
];
export function distinctCase(n: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  const words = `${WORDS[n % 26]} ${WORDS[Math.floor(n / 26) % 26]} ${WORDS[Math.floor(n / 676) % 26]}`;
  return referenceCase({
    case_id: `case-${String(n).padStart(5, '0')}`,
    turn_id: `turn-${n}`,
    occurred_at_ms: 1_767_225_600_000 + n * 1000,
    observation: { evidence: `tool rejected the call: unknown option ${words}`, actual_behavior: 'The tool executor rejected the tool call.' },
    ...over,
  });
}
export const caseLine = (n: number, over: Record<string, unknown> = {}) => JSON.stringify(distinctCase(n, over));

/** The journal writer fixture (test/fixtures/journal-writer.mjs) as a separate process. */
export interface JournalWriter {
  path: string;
  append(lines: string[]): Promise<void>;
  write(text: string): Promise<void>;
  compact(keepFrom: string | null, how?: 'rename' | 'inplace'): Promise<void>;
  rotate(to: string): Promise<void>;
  remove(): Promise<void>;
  close(): Promise<void>;
}

export function startJournalWriter(path: string): JournalWriter {
  const child = spawn(process.execPath, [join(ROOT, 'test/fixtures/journal-writer.mjs'), path], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const waiting: Array<(v: void) => void> = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  createInterface({ input: child.stdout! }).on('line', () => waiting.shift()?.());
  const send = (cmd: Record<string, unknown>) =>
    new Promise<void>((resolve, reject) => {
      if (child.exitCode !== null) return reject(new Error(`journal writer exited: ${err}`));
      waiting.push(resolve);
      child.stdin!.write(JSON.stringify(cmd) + '\n');
    });
  return {
    path,
    append: (lines) => send({ op: 'append', lines }),
    write: (text) => send({ op: 'write', text }),
    compact: (keepFrom, how = 'rename') => send({ op: 'compact', keepFrom, how }),
    rotate: (to) => send({ op: 'rotate', to }),
    remove: () => send({ op: 'delete' }),
    close: async () => {
      child.stdin!.end();
      await exited;
    },
  };
}
