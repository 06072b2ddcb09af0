/** `vigil validate` knows the `journal` receiver's and the `detect` processor's keys. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { spawnVigil, tempDir, writeConfig } from './helpers/vigil-process.ts';

async function validate(yaml: string) {
  const file = writeConfig(tempDir(), yaml);
  const v = spawnVigil(['validate', '-c', file]);
  const code = await v.exited;
  return { code, out: v.stdout(), err: v.stderr(), file };
}

const config = (journal: string, detect = '{}') => `receivers:
  journal:
${journal}
processors:
  classify: {}
  detect: ${detect}
  recurrence: {}
exporters:
  debug: {}
state:
  memory: {}
service:
  pipelines:
    logs: { receivers: [journal], processors: [classify, detect, recurrence], exporters: [debug] }
`;

describe('vigil validate: journal and detect', () => {
  test('every key of the journal receiver is accepted', async () => {
    const r = await validate(
      config(`    include: [./sessions/**/runtime_error_cases.jsonl, ~/.agent/runtime_error_cases.jsonl]
    exclude: ['**/archive/**', '*.bak']
    start_at: end
    poll_interval: 250ms
    batch_size: 64
    max_line_size: 256KiB
    service: my-agent
    session_from_path: /sessions/([^/]+)/`),
    );
    assert.equal(r.code, 0, r.out + r.err);
  });

  test('a misspelled key, a wrong value, a missing include and a regex without a group are each reported where they are', async () => {
    const r = await validate(
      config(`    include: []
    poll_intervall: 1s
    start_at: middle
    max_line_size: 10
    session_from_path: "/sessions/[^/]+/"`),
    );
    assert.equal(r.code, 1);
    assert.match(r.out, new RegExp(`^${r.file}:4:5: unknown key 'poll_intervall'.*did you mean 'poll_interval'`, 'm'));
    assert.match(r.out, new RegExp(`^${r.file}:5:15: .*start_at.* must be one of beginning, end`, 'm'));
    const broken = await validate(config(`    include: []`));
    assert.match(broken.out, /'receivers.journal.include' must name at least one file or glob/);
    const rules = await validate(config(`    include: [x.jsonl]\n    max_line_size: 10\n    session_from_path: "/sessions/[^/]+/"`));
    assert.match(rules.out, /'receivers.journal.max_line_size' must be between 1KiB and 64MiB/);
    assert.match(rules.out, /'receivers.journal.session_from_path' needs a capture group for the session/);
    const badRegex = await validate(config(`    include: [x.jsonl]\n    session_from_path: "(["`));
    assert.match(badRegex.out, /'receivers.journal.session_from_path' is not a valid regular expression/);
  });

  test("detect's keys: a detector name that does not exist is named with the valid ones", async () => {
    const r = await validate(config(`    include: [x.jsonl]`, '{ repeat_threshold: 1, detectors: [invalid_tool_args, repeated_tool_error] }'));
    assert.equal(r.code, 1);
    assert.match(r.out, /'processors.detect.repeat_threshold' must be an integer from 2 to 1000, got 1/);
    assert.match(r.out, /detectors.1.* must be one of invalid_tool_args, tool_schema_error, repeated_identical_tool_error/);
  });
});
