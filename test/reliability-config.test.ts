/**
 * Reliability, case 3: a secret or access-control setting that resolves empty is a config error
 * with its FILE:LINE:COL — never a silent "auth off" or "unsigned". Checked against the real
 * component registry for every way a value comes out empty (an empty, `null` or `~` environment
 * variable, a bare key, an empty mapping, blank text), and end to end: `vigil run` refuses to
 * start, and a token that is set is required.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { components } from '../src/components.ts';
import { ConfigError, formatDiagnostic, loadConfigText } from '../src/config/load.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { freePort, spawnVigil, tempDir, waitFor, writeConfig, type VigilChild } from './helpers/vigil-process.ts';

const y = (text: string): string => text.replace(/^\n/, '');

function problems(text: string, env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfigText(text, 'pipeline.yaml', components(), env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic);
  }
  return [];
}

const receiverWith = (auth: string) =>
  y(`
receivers:
  otlp:
    protocols: { http: { endpoint: 127.0.0.1:4318 } }
${auth}
exporters:
  debug: {}
state:
  memory: {}
service:
  pipelines:
    logs: { receivers: [otlp], exporters: [debug] }
`);

describe('empty secrets are config errors', () => {
  const cases: Array<[string, string, NodeJS.ProcessEnv]> = [
    ['${env:TOK} with TOK empty', '    auth:\n      bearer_token: ${env:TOK}', { TOK: '' }],
    ['${env:TOK} with TOK=null', '    auth:\n      bearer_token: ${env:TOK}', { TOK: 'null' }],
    ['${env:TOK} with TOK=~', '    auth:\n      bearer_token: ${env:TOK}', { TOK: '~' }],
    ['"${env:TOK}" quoted, TOK empty', '    auth: { bearer_token: "${env:TOK}" }', { TOK: '' }],
    ['${env:TOK:-} (an empty default)', '    auth:\n      bearer_token: ${env:TOK:-}', {}],
    ['a bare bearer_token:', '    auth:\n      bearer_token:', {}],
    ['bearer_token: ~', '    auth: { bearer_token: ~ }', {}],
    ['bearer_token: null', '    auth: { bearer_token: null }', {}],
    ['blank text', '    auth: { bearer_token: "   " }', {}],
    ['a bare auth:', '    auth:', {}],
    ['auth: {}', '    auth: {}', {}],
  ];
  for (const [name, auth, env] of cases) {
    test(`otlp receiver auth: ${name}`, () => {
      const p = problems(receiverWith(auth), env);
      assert.equal(p.length, 1, p.join('\n'));
      assert.match(p[0]!, /^pipeline\.yaml:\d+:\d+: 'receivers\.otlp\.auth(\.bearer_token)?' (must not be empty|is required)/);
    });
  }

  test('a token that is set is accepted; no auth key at all means no auth (on purpose)', () => {
    assert.deepEqual(problems(receiverWith('    auth:\n      bearer_token: ${env:TOK}'), { TOK: 's3cret' }), []);
    assert.deepEqual(problems(receiverWith(''), {}), []);
  });

  const exporterConfig = (exporter: string, extensions = '', service = '') =>
    y(`
receivers:
  otlp: {}
exporters:
${exporter}
extensions:
  health_check:
${extensions || '    endpoint: 127.0.0.1:13133'}
state:
  memory: {}
service:
  extensions: [health_check]
${service}
  pipelines:
    logs: { receivers: [otlp], exporters: [${exporter.trim().split(':')[0]}] }
`);

  const others: Array<[string, string, RegExp]> = [
    ['webhook secret', exporterConfig('  webhook:\n    endpoint: http://127.0.0.1:9/hook\n    secret: ${env:S}'), /'exporters\.webhook\.secret' must not be empty/],
    [
      'webhook header value',
      exporterConfig('  webhook:\n    endpoint: http://127.0.0.1:9/hook\n    headers:\n      x-api-key: ${env:S}'),
      /'exporters\.webhook\.headers\.x-api-key' must not be empty/,
    ],
    [
      'otlphttp header value',
      exporterConfig('  otlphttp:\n    endpoint: http://127.0.0.1:9\n    headers:\n      authorization: ${env:S}'),
      /'exporters\.otlphttp\.headers\.authorization' must not be empty/,
    ],
    [
      'webhook URL password',
      exporterConfig('  webhook:\n    endpoint: http://user:${env:S}@127.0.0.1:9/hook'),
      /'exporters\.webhook\.endpoint' has credentials that are empty/,
    ],
    [
      'redis_stream URL password',
      exporterConfig('  redis_stream:\n    url: redis://:${env:S}@127.0.0.1:6379/0'),
      /'exporters\.redis_stream\.url' has credentials that are empty/,
    ],
    [
      'health_check auth',
      exporterConfig('  debug: {}', '    auth:\n      bearer_token: ${env:S}'),
      /'extensions\.health_check\.auth\.bearer_token' must not be empty/,
    ],
    [
      'metrics auth',
      exporterConfig('  debug: {}', '', '  telemetry:\n    metrics:\n      address: 127.0.0.1:8888\n      auth:\n        bearer_token: ${env:S}'),
      /'service\.telemetry\.metrics\.auth\.bearer_token' must not be empty/,
    ],
  ];
  for (const [name, text, expected] of others) {
    test(`${name} resolving empty`, () => {
      const p = problems(text, { S: '' });
      assert.ok(
        p.some((x) => expected.test(x)),
        p.join('\n') || 'no problem reported',
      );
      assert.deepEqual(problems(text, { S: 'set' }), [], 'and valid once set');
    });
  }
  test('the Redis store URL with an empty password', () => {
    const text = receiverWith('').replace('  memory: {}', '  redis: { url: "redis://:${env:S}@127.0.0.1:6379/0" }');
    assert.ok(
      problems(text, { S: '' }).some((x) => /'state\.redis\.url' has credentials that are empty/.test(x)),
      'the empty Redis password is reported',
    );
  });
});

describe('end to end', () => {
  const children: VigilChild[] = [];
  test('vigil run with an empty token refuses to start; with a token it requires it', async (t) => {
    t.after(() => children.forEach((c) => c.child.kill('SIGKILL')));
    const port = await freePort();
    const config = writeConfig(tempDir(), receiverWith('    auth:\n      bearer_token: ${env:TOK}').replace('4318', String(port)));
    const empty = spawnVigil(['run', '-c', config], { env: { TOK: '' } });
    children.push(empty);
    assert.equal(await empty.exited, 1);
    assert.match(empty.stdout() + empty.stderr(), /receivers\.otlp\.auth\.bearer_token' must not be empty/);

    const ok = spawnVigil(['run', '-c', config], { env: { TOK: 'the-token' } });
    children.push(ok);
    const url = `http://127.0.0.1:${port}/v1/logs`;
    const body = otlpLogs([{ time: Date.UTC(2026, 0, 1), body: 'ValueError: x', session: 's' }]);
    await waitFor(
      async () => ((await postLogs(url, body).catch(() => undefined))?.status === 401 ? true : undefined),
      'vigil to refuse a request without the token',
    );
    const authed = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer the-token' }, body });
    assert.equal(authed.status, 200);
    ok.child.kill('SIGTERM');
    assert.equal(await ok.exited, 0);
  });
});
