import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeRegistry } from '../src/component.ts';
import type { Registry } from '../src/component.ts';
import { ConfigError, formatDiagnostic, loadConfigFile, loadConfigText } from '../src/config/load.ts';
import type { VigilConfig } from '../src/config/load.ts';
import { expandString } from '../src/config/env.ts';
import { type ParseContext, Schema, s } from '../src/config/schema.ts';
import type { Path } from '../src/config/schema.ts';
import { isVigilError } from '../src/errors.ts';

/** Passes any value through untouched, to see what type substitution produced. */
class RawSchema extends Schema<unknown> {
  readonly expected = 'anything';
  protected parsePresent(value: unknown, _path: Path, _ctx: ParseContext): unknown {
    return value;
  }
}

const notUsed = (): never => {
  throw new Error('not used');
};

function registry(opts: { sqlite?: boolean } = {}): Registry {
  return makeRegistry({
    receivers: [
      {
        type: 'otlp',
        signals: ['traces', 'logs'],
        create: notUsed,
        schema: s.object({
          protocols: s.object({ http: s.object({ endpoint: s.endpoint().default('127.0.0.1:4318') }) }),
        }),
      },
      { type: 'jsonl', signals: ['logs'], create: notUsed, schema: s.object({ include: s.array(s.string()).default([]) }) },
    ],
    processors: [
      { type: 'classify', create: notUsed, schema: s.object({}) },
      {
        type: 'recurrence',
        create: notUsed,
        schema: s.object({
          min_recurrence: s.int({ min: 1 }).default(2),
          grouping_window: s.duration().default(60_000),
          flush_after: s.duration().default(500),
          scope: s.enumOf(['service', 'session']).default('service'),
        }),
      },
    ],
    exporters: [
      { type: 'debug', create: notUsed, schema: s.object({ tag: new RawSchema().optional() }) },
      { type: 'file', create: notUsed, schema: s.object({ path: s.string({ minLength: 1 }) }) },
    ],
    extensions: [{ type: 'health_check', create: notUsed, schema: s.object({ endpoint: s.endpoint().default('127.0.0.1:13133') }) }],
    stores: [
      { type: 'memory', create: notUsed, schema: s.object({}) },
      ...(opts.sqlite === false ? [] : [{ type: 'sqlite', create: notUsed, schema: s.object({ path: s.string().default('.vigil/state.db') }) }]),
    ],
  });
}

const load = (text: string, env: NodeJS.ProcessEnv = {}, reg = registry()): VigilConfig => loadConfigText(text, 'pipeline.yaml', reg, env);

/** The formatted diagnostics of the ConfigError that loading `text` must throw. */
function problems(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    load(text, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    assert.equal(err.code, 'VIGIL_CONFIG_INVALID');
    assert.equal(err.message, err.diagnostics.map(formatDiagnostic).join('\n'));
    return err.diagnostics.map(formatDiagnostic);
  }
  assert.fail('expected the config to be rejected');
}

// Fixtures are written flush-left: line 1 is the line after the opening backtick.
const y = (text: string): string => text.replace(/^\n/, '');

const MINIMAL = y(`
receivers:
  otlp:
exporters:
  debug:
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
`);

describe('loadConfigText: valid configs', () => {
  test('a minimal config parses with defaults applied', () => {
    const cfg = load(MINIMAL);
    assert.deepEqual(cfg.receivers.get('otlp'), { id: 'otlp', type: 'otlp', config: { protocols: { http: { endpoint: '127.0.0.1:4318' } } } });
    assert.deepEqual(cfg.exporters.get('debug')?.config, {});
    assert.equal(cfg.processors.size, 0);
    assert.deepEqual(cfg.state, { type: 'sqlite', config: { path: '.vigil/state.db' } });
    assert.deepEqual(cfg.service.pipelines.get('traces'), { id: 'traces', signal: 'traces', receivers: ['otlp'], processors: [], exporters: ['debug'] });
    assert.deepEqual(cfg.service.extensions, []);
    assert.equal(cfg.service.telemetry.logs.level, 'info');
    assert.deepEqual(cfg.warnings, []);
    assert.equal(cfg.file, 'pipeline.yaml');
  });

  test('without sqlite registered, an absent state falls back to memory', () => {
    assert.deepEqual(load(MINIMAL, {}, registry({ sqlite: false })).state, { type: 'memory', config: {} });
  });

  test('a full config: named components, named pipelines, state, extensions, telemetry', () => {
    const cfg = load(
      y(`
receivers:
  otlp:
  jsonl/agent: { include: [./agent.jsonl] }
processors:
  classify: {}
  recurrence: { min_recurrence: 3, grouping_window: 60s, flush_after: 500ms, scope: session }
exporters:
  file/work: { path: ./work-events.jsonl }
extensions:
  health_check:
state:
  sqlite: { path: /var/lib/vigil.db }
service:
  extensions: [health_check]
  telemetry: { logs: { level: debug } }
  pipelines:
    traces: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/work] }
    logs/agent: { receivers: [jsonl/agent], exporters: [file/work] }
`),
    );
    assert.deepEqual(cfg.receivers.get('jsonl/agent'), { id: 'jsonl/agent', type: 'jsonl', name: 'agent', config: { include: ['./agent.jsonl'] } });
    assert.deepEqual(cfg.processors.get('recurrence')?.config, { min_recurrence: 3, grouping_window: 60_000, flush_after: 500, scope: 'session' });
    assert.deepEqual(cfg.extensions.get('health_check')?.config, { endpoint: '127.0.0.1:13133' });
    assert.deepEqual(cfg.state, { type: 'sqlite', config: { path: '/var/lib/vigil.db' } });
    assert.equal(cfg.service.telemetry.logs.level, 'debug');
    assert.deepEqual(cfg.service.pipelines.get('logs/agent')?.signal, 'logs');
    assert.deepEqual(cfg.service.pipelines.get('traces')?.processors, ['classify', 'recurrence']);
    assert.deepEqual(cfg.warnings, []);
  });

  test('a component defined but used by no pipeline is a warning, not an error', () => {
    const cfg = load(
      y(`
receivers:
  otlp:
exporters:
  debug:
  file/unused: { path: ./x.jsonl }
extensions:
  health_check:
service:
  pipelines:
    traces: { receivers: [otlp], exporters: [debug] }
`),
    );
    assert.deepEqual(cfg.warnings.map(formatDiagnostic), [
      "pipeline.yaml:5:3: warning: exporter 'file/unused' is defined but is not used by any pipeline; it will not be started (add it to a pipeline or remove it)",
      "pipeline.yaml:7:3: warning: extension 'health_check' is defined but is not listed in service.extensions; it will not be started (add it there or remove it)",
    ]);
    assert.ok(cfg.exporters.has('file/unused'));
  });
});

describe('loadConfigText: environment substitution', () => {
  const text = y(`
receivers:
  otlp:
    protocols:
      http: { endpoint: "\${env:VIGIL_HOST:-127.0.0.1}:\${env:VIGIL_PORT}" }
processors:
  recurrence:
    min_recurrence: \${env:MIN_RECURRENCE}
    grouping_window: \${env:WINDOW:-90s}
exporters:
  file/work: { path: "\${env:OUT}/work-$$HOME.jsonl" }
  debug:
    tag: \${env:TAG}
  debug/quoted:
    tag: "\${env:TAG}"
service:
  pipelines:
    traces: { receivers: [otlp], processors: [recurrence], exporters: [file/work, debug, debug/quoted] }
`);

  test('set variables, defaults, $$ escapes and whole-scalar typing', () => {
    const cfg = load(text, { VIGIL_PORT: '9999', MIN_RECURRENCE: '4', OUT: '/tmp/out', TAG: '42' });
    assert.equal((cfg.receivers.get('otlp')?.config as any).protocols.http.endpoint, '127.0.0.1:9999');
    assert.deepEqual(cfg.processors.get('recurrence')?.config, { min_recurrence: 4, grouping_window: 90_000, flush_after: 500, scope: 'service' });
    assert.deepEqual(cfg.exporters.get('file/work')?.config, { path: '/tmp/out/work-$HOME.jsonl' });
    // An unquoted whole reference is re-read as YAML (a number); a quoted one stays a string.
    assert.deepEqual(cfg.exporters.get('debug')?.config, { tag: 42 });
    assert.deepEqual(cfg.exporters.get('debug/quoted')?.config, { tag: '42' });
  });

  test('an unset variable without default is an error at its value, reported once', () => {
    assert.deepEqual(problems(text, { VIGIL_PORT: '9999', MIN_RECURRENCE: '4', TAG: 'x' }), [
      "pipeline.yaml:10:22: 'exporters.file/work.path': environment variable OUT is not set: set OUT or write ${env:OUT:-default}",
    ]);
  });

  test('every unset variable is reported, and only ${env:...} references are accepted', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp: { protocols: { http: { endpoint: "\${PORT}" } } }
exporters:
  debug:
    tag: \${env:A}-\${env:B}
service:
  pipelines:
    traces: { receivers: [otlp], exporters: [debug] }
`),
      ),
      [
        "pipeline.yaml:2:42: 'receivers.otlp.protocols.http.endpoint': unsupported reference '${PORT}': only ${env:VAR} and ${env:VAR:-default} are supported; write $$ for a literal $",
        "pipeline.yaml:5:10: 'exporters.debug.tag': environment variable A is not set: set A or write ${env:A:-default}; environment variable B is not set: set B or write ${env:B:-default}",
      ],
    );
  });

  test('expandString', () => {
    assert.deepEqual(expandString('${env:X}', { X: 'true' }), { ok: true, text: 'true', whole: true });
    assert.deepEqual(expandString('a${env:X:-}b', {}), { ok: true, text: 'ab', whole: false });
    assert.deepEqual(expandString('$${env:X} costs $5', {}), { ok: true, text: '${env:X} costs $5', whole: false });
    assert.deepEqual(expandString('${env:X', {}), { ok: false, message: "unterminated reference '${env:X': close it with '}', or write $$ for a literal $" });
    assert.deepEqual(expandString('${env:A}${env:B}', {}), {
      ok: false,
      message: 'environment variable A is not set: set A or write ${env:A:-default}; environment variable B is not set: set B or write ${env:B:-default}',
    });
  });
});

describe('loadConfigText: component configs', () => {
  const withRecurrence = (body: string): string =>
    y(`
receivers:
  otlp:
processors:
  recurrence:
${body}
exporters:
  debug:
service:
  pipelines:
    traces: { receivers: [otlp], processors: [recurrence], exporters: [debug] }
`);

  test('durations become milliseconds', () => {
    const cfg = load(withRecurrence('    grouping_window: 60s\n    flush_after: 500ms'));
    assert.equal((cfg.processors.get('recurrence')?.config as any).grouping_window, 60_000);
    assert.equal((cfg.processors.get('recurrence')?.config as any).flush_after, 500);
  });

  test('a bad duration is an error at the value', () => {
    assert.deepEqual(problems(withRecurrence('    grouping_window: sixty')), [
      `pipeline.yaml:5:22: 'processors.recurrence.grouping_window' must be a duration such as 60s, 500ms or 1m30s, got the string "sixty"`,
    ]);
  });

  test('a misspelled key is an error at the key, with did-you-mean', () => {
    assert.deepEqual(problems(withRecurrence('    min_recurence: 3')), [
      "pipeline.yaml:5:5: unknown key 'min_recurence' in 'processors.recurrence' (did you mean 'min_recurrence'?); valid keys: min_recurrence, grouping_window, flush_after, scope",
    ]);
  });

  test('a value of the wrong type is an error at the value', () => {
    assert.deepEqual(problems(withRecurrence('    min_recurrence: two')), [
      `pipeline.yaml:5:21: 'processors.recurrence.min_recurrence' must be an integer >= 1, got the string "two"`,
    ]);
  });

  test('a missing required key is reported at the component that lacks it', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
exporters:
  file/work: {}
service:
  pipelines:
    traces: { receivers: [otlp], exporters: [file/work] }
`),
      ),
      ["pipeline.yaml:4:3: 'exporters.file/work.path' is required: expected a string"],
    );
  });

  test('an unknown component type is an error at its key naming the valid types', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otpl:
exporters:
  debug:
service:
  pipelines:
    traces: { receivers: [otpl], exporters: [debug] }
`),
      ),
      ["pipeline.yaml:2:3: unknown receiver type 'otpl' in 'receivers.otpl' (did you mean 'otlp'?); valid types: otlp, jsonl"],
    );
  });

  test('an unknown store type is an error at its key', () => {
    assert.deepEqual(problems(MINIMAL + 'state:\n  sqlit: { path: x.db }\n'), [
      "pipeline.yaml:11:3: unknown store type 'sqlit' in 'state' (did you mean 'sqlite'?); valid types: memory, sqlite",
    ]);
  });

  test('an invalid component id and a state naming two stores', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
exporters:
  debug/:
state:
  memory:
  sqlite:
service:
  pipelines:
    traces: { receivers: [otlp], exporters: [debug/] }
`),
      ),
      [
        "pipeline.yaml:4:3: invalid exporter id 'debug/' in 'exporters': write type or type/name, where the name is non-empty letters, digits, '_', '.' or '-'",
        "pipeline.yaml:7:3: 'state' must name exactly one store, got memory, sqlite; keep one of them",
      ],
    );
  });
});

describe('loadConfigText: document and service structure', () => {
  test('an unknown top-level key is an error naming the valid keys', () => {
    assert.deepEqual(problems(MINIMAL + 'recievers: {}\n'), [
      "pipeline.yaml:10:1: unknown key 'recievers' (did you mean 'receivers'?); valid keys: receivers, processors, exporters, extensions, state, service",
    ]);
  });

  test('an undefined pipeline component is an error at the list item', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
exporters:
  debug:
  file/work: { path: ./work.jsonl }
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug, file/wrok]
`),
      ),
      [
        // The misspelled reference also leaves 'file/work' unused, which is worth a warning.
        "pipeline.yaml:5:3: warning: exporter 'file/work' is defined but is not used by any pipeline; it will not be started (add it to a pipeline or remove it)",
        "pipeline.yaml:10:26: service.pipelines.traces.exporters: 'file/wrok' is not defined under 'exporters'; defined: debug, file/work (did you mean 'file/work'?)",
      ],
    );
  });

  test('an unknown pipeline signal, a duplicate, a wrong signal and an empty list', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
  jsonl:
exporters:
  debug:
service:
  pipelines:
    metrics: { receivers: [otlp], exporters: [debug] }
    traces:
      receivers: [otlp, jsonl, otlp]
      exporters: []
`),
      ),
      [
        "pipeline.yaml:8:5: unknown pipeline signal 'metrics' in 'service.pipelines.metrics'; valid pipeline ids: traces, logs, traces/<name>, logs/<name>",
        "pipeline.yaml:10:25: service.pipelines.traces.receivers: receiver 'jsonl' does not handle traces (it handles: logs); remove it from this pipeline",
        "pipeline.yaml:10:32: service.pipelines.traces.receivers: 'otlp' is listed more than once; list each receiver once",
        "pipeline.yaml:11:18: 'service.pipelines.traces.exporters' must list at least one exporter",
      ],
    );
  });

  test('no pipelines at all is an error', () => {
    assert.deepEqual(problems('receivers:\n  otlp:\n'), [
      'pipeline.yaml:1:1: no pipelines are defined: add service.pipelines with at least one of traces, logs, traces/<name>, logs/<name>, e.g. traces: { receivers: [otlp], exporters: [debug] }',
      "pipeline.yaml:2:3: warning: receiver 'otlp' is defined but is not used by any pipeline; it will not be started (add it to a pipeline or remove it)",
    ]);
  });

  test('a YAML syntax error is reported with its position', () => {
    assert.deepEqual(problems('receivers:\n  otlp: { protocols: [1, 2\nexporters:\n'), [
      // Only the first syntax error: the ones after it are consequences of it.
      'pipeline.yaml:3:1: YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]',
    ]);
  });

  test('an unquoted reference inside a flow mapping gets a hint to quote it', () => {
    assert.deepEqual(problems('exporters:\n  file: { path: ${env:OUT} }\n'), [
      'pipeline.yaml:2:18: YAML syntax error: Unexpected flow-map-start at node end; quote values holding ${env:...} inside { } or [ ], e.g. "${env:VAR}"',
    ]);
  });

  test('a duplicate key is an error at the second occurrence', () => {
    assert.deepEqual(problems(MINIMAL + 'exporters:\n  debug:\n'), [
      "pipeline.yaml:10:1: duplicate key 'exporters': each key may appear once in a mapping; merge or remove the repeated one",
    ]);
  });

  test('several errors are reported together, in file order', () => {
    const lines = problems(
      y(`
receivers:
  otlp:
    protocol: {}
processors:
  recurrence: { min_recurrence: 0, grouping_window: soon }
exporters:
  debug:
extensions:
  health_check: { endpoint: nowhere }
service:
  extensions: [healthcheck]
  telemetry: { logs: { level: loud } }
  pipelines:
    logs: { receivers: [otlp], processors: [recurrence, classify], exporters: [debug] }
`),
    );
    assert.deepEqual(lines, [
      "pipeline.yaml:3:5: unknown key 'protocol' in 'receivers.otlp' (did you mean 'protocols'?); valid keys: protocols",
      "pipeline.yaml:5:33: 'processors.recurrence.min_recurrence' must be an integer >= 1, got 0",
      `pipeline.yaml:5:53: 'processors.recurrence.grouping_window' must be a duration such as 60s, 500ms or 1m30s, got the string "soon"`,
      "pipeline.yaml:9:3: warning: extension 'health_check' is defined but is not listed in service.extensions; it will not be started (add it there or remove it)",
      `pipeline.yaml:9:29: 'extensions.health_check.endpoint' must be an endpoint such as 127.0.0.1:4318, got the string "nowhere"`,
      "pipeline.yaml:11:16: service.extensions: 'healthcheck' is not defined under 'extensions'; defined: health_check (did you mean 'health_check'?)",
      `pipeline.yaml:12:31: 'service.telemetry.logs.level' must be one of debug, info, warn, error, got the string "loud"`,
      "pipeline.yaml:14:57: service.pipelines.logs.processors: 'classify' is not defined under 'processors'; defined: recurrence",
    ]);
  });
});

describe('loadConfigFile', () => {
  test('reads and loads a file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vigil-config-'));
    try {
      const file = join(dir, 'pipeline.yaml');
      await writeFile(file, MINIMAL);
      const cfg = await loadConfigFile(file, registry(), {});
      assert.equal(cfg.file, file);
      assert.ok(cfg.service.pipelines.has('traces'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a missing file is VIGIL_CONFIG_NOT_FOUND naming the path', async () => {
    await assert.rejects(loadConfigFile('/nonexistent/vigil/pipeline.yaml', registry()), (err: unknown) => {
      assert.ok(isVigilError(err, 'VIGIL_CONFIG_NOT_FOUND'));
      assert.match(err.message, /\/nonexistent\/vigil\/pipeline\.yaml/);
      return true;
    });
  });
});
