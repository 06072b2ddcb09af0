/** `vigil validate` as a user runs it: exit codes and FILE:LINE:COL messages. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { spawnVigil, tempDir, writeConfig } from './helpers/vigil-process.ts';

async function validate(yaml: string) {
  const file = writeConfig(tempDir(), yaml);
  const v = spawnVigil(['validate', '-c', file]);
  const code = await v.exited;
  return { code, out: v.stdout(), err: v.stderr(), file };
}

const BASE = (processors: string, exporters = '[debug]') => `receivers:
  otlp: {}
processors:
${processors}
exporters:
  debug: {}
state:
  memory: {}
service:
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: ${exporters} }
`;

describe('vigil validate', () => {
  test('the default pipeline.yaml is valid', async () => {
    const v = spawnVigil(['validate', '-c', 'pipeline.yaml']);
    assert.equal(await v.exited, 0, v.stdout() + v.stderr());
    assert.match(v.stdout(), /valid/);
  });

  test('a misspelled key is reported at its line and column with the fix', async () => {
    const r = await validate(BASE('  classify: {}\n  recurrence:\n    min_recurence: 3\n'));
    assert.equal(r.code, 1);
    assert.match(r.out, new RegExp(`^${r.file}:6:5: unknown key 'min_recurence'.*did you mean 'min_recurrence'`, 'm'));
  });

  test('a wrong type is reported at the value', async () => {
    const r = await validate(BASE('  classify: {}\n  recurrence:\n    grouping_window: sixty\n'));
    assert.equal(r.code, 1);
    assert.match(r.out, new RegExp(`^${r.file}:6:22: .*grouping_window.* must be a duration`, 'm'));
  });

  test('an undefined pipeline component is reported at the list item, naming what is defined', async () => {
    const r = await validate(BASE('  classify: {}\n  recurrence: {}\n', '[debug, file/wrok]'));
    assert.equal(r.code, 1);
    assert.match(r.out, new RegExp(`^${r.file}:13:87: .*'file/wrok' is not defined under 'exporters'.*debug`, 'm'));
  });

  test('all problems are listed together; a missing file is a clear error', async () => {
    const r = await validate(BASE('  classify: { rules: best }\n  recurrence:\n    max_per_turn: -1\n'));
    assert.equal(r.code, 1);
    assert.equal(r.out.trim().split('\n').length, 2, r.out);
    const missing = spawnVigil(['validate', '-c', '/nonexistent/pipeline.yaml']);
    assert.equal(await missing.exited, 1);
    assert.match(missing.stderr(), /cannot read config file '\/nonexistent\/pipeline.yaml': no such file/);
  });
});
