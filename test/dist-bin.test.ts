/**
 * The package as shipped: the compiled bin (bin/vigil.js → dist/, no TypeScript loader) runs
 * `validate`, `run` and `classify`; `npm pack` holds the bin, dist/ and the default pipeline and
 * nothing else; and every package the compiled code imports is a runtime dependency. `npm test`
 * builds dist/ first; run alone, this test needs `npm run build` after a change to src/.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type * as VigilApi from '../src/index.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { BIN, freePort, ROOT, spawnVigil, tempDir, waitFor, writeConfig } from './helpers/vigil-process.ts';

const DIST = join(ROOT, 'dist');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

/** Module specifiers of a compiled file's static imports, re-exports and literal dynamic imports. */
function specifiers(js: string): string[] {
  const out: string[] = [];
  for (const m of js.matchAll(
    /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  )) {
    out.push((m[1] ?? m[2] ?? m[3])!);
  }
  return out;
}

const packageName = (spec: string) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);

describe('the compiled package', () => {
  before(() => {
    assert.ok(existsSync(join(DIST, 'cli/bin.js')), 'dist/ is missing: run `npm run build`');
    const built = statSync(join(DIST, 'cli/bin.js')).mtimeMs;
    const newer = filesUnder(join(ROOT, 'src')).filter((f) => statSync(f).mtimeMs > built);
    assert.deepEqual(
      newer.map((f) => relative(ROOT, f)),
      [],
      'dist/ is older than these sources: run `npm run build`',
    );
  });

  test('dist/ is plain JavaScript with declarations: relative imports end in .js, no loader is imported', () => {
    const js = filesUnder(DIST).filter((f) => f.endsWith('.js'));
    assert.ok(js.length > 50, `only ${js.length} compiled files`);
    for (const f of js) {
      for (const spec of specifiers(readFileSync(f, 'utf8'))) {
        if (spec.startsWith('.')) assert.match(spec, /\.js$/, `${relative(ROOT, f)} imports ${spec}`);
        else assert.notEqual(packageName(spec), 'tsx', `${relative(ROOT, f)} imports tsx`);
      }
      assert.ok(existsSync(f.replace(/\.js$/, '.d.ts')), `${relative(ROOT, f)} has no declarations`);
    }
    assert.deepEqual(specifiers(readFileSync(BIN, 'utf8')), ['node:fs'], 'bin/vigil.js imports only node:fs and dist/');
  });

  test('every package the compiled code imports is a runtime dependency; tsx and the test tools are not', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    const deps = new Set(Object.keys(pkg.dependencies));
    const builtins = new Set(builtinModules);
    const imported = new Set<string>();
    for (const f of filesUnder(DIST).filter((x) => x.endsWith('.js'))) {
      for (const spec of specifiers(readFileSync(f, 'utf8'))) {
        if (spec.startsWith('.') || spec.startsWith('node:') || builtins.has(spec)) continue;
        imported.add(packageName(spec));
      }
    }
    const missing = [...imported].filter((p) => !deps.has(p));
    assert.deepEqual(missing, [], 'imported by dist/ but not in dependencies');
    for (const dev of ['tsx', 'typescript', 'fast-check', 'protobufjs', 'eslint', 'prettier']) assert.ok(!deps.has(dev), `${dev} is a runtime dependency`);
    assert.ok(imported.size >= 8, `dist/ imports only ${[...imported].join(', ')}`);
  });

  test('npm pack holds the bin, dist/, the default pipeline and the docs — no sources, tests or benches', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    const files: string[] = JSON.parse(out)[0].files.map((f: { path: string }) => f.path);
    for (const need of ['package.json', 'README.md', 'pipeline.yaml', 'bin/vigil.js', 'dist/cli/bin.js', 'dist/index.js', 'dist/index.d.ts']) {
      assert.ok(files.includes(need), `the package lacks ${need}`);
    }
    const stray = files.filter((f) => !/^(package\.json|README\.md|LICENSE|pipeline\.yaml|bin\/vigil\.js)$/.test(f) && !/^dist\/.+\.(js|d\.ts)$/.test(f));
    assert.deepEqual(stray, [], 'files in the package that a user does not need');
  });

  test('the module entry exports the classifier and the error codes', async () => {
    const api = (await import(pathToFileURL(join(DIST, 'index.js')).href)) as typeof VigilApi;
    const line = api.classifyLine('{"text":"ValueError: bad port","exit_code":1}', 1);
    assert.deepEqual(line, { classification: 'ExecutionFailure', signature: 'ValueError: bad port', fingerprint: (line as { fingerprint: string }).fingerprint });
    assert.match((line as { fingerprint: string }).fingerprint, /^v\d+:[0-9a-f]{16}$/);
    assert.ok(api.ERROR_CODES.VIGIL_CONFIG_INVALID);
    assert.ok(new api.VigilError('VIGIL_SHUTDOWN', 'x') instanceof Error);
  });

  test('vigil validate: a valid file, a broken one (FILE:LINE:COL), and the shipped default in an empty directory', async () => {
    const dir = tempDir();
    const good = spawnVigil(['validate', '-c', join(ROOT, 'pipeline.yaml')], { bin: 'dist' });
    assert.equal(await good.exited, 0, good.stderr());
    assert.match(good.stdout(), /pipeline\.yaml: valid \(2 pipelines\)/);

    const bad = writeConfig(
      dir,
      'receivers:\n  otlp: {}\nexporters:\n  file: { pathh: x }\nservice:\n  pipelines:\n    logs: { receivers: [otlp], exporters: [file] }\n',
    );
    const broken = spawnVigil(['validate', '-c', bad], { bin: 'dist' });
    assert.equal(await broken.exited, 1);
    assert.match(broken.stdout(), new RegExp(`^${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4:11: unknown key 'pathh'`, 'm'));

    const empty = tempDir();
    const shipped = spawnVigil(['validate'], { bin: 'dist', cwd: empty });
    assert.equal(await shipped.exited, 0, shipped.stderr());
    assert.match(shipped.stderr(), /no pipeline\.yaml in .*; using the default pipeline .*pipeline\.yaml/);
  });

  test('vigil run with the shipped default pipeline in an empty directory: OTLP in, one work event out, SIGTERM exits 0', async () => {
    const dir = tempDir();
    const [otlp, health, metrics] = [await freePort(), await freePort(), await freePort()];
    const vigil = spawnVigil(['run'], {
      bin: 'dist',
      cwd: dir,
      env: { VIGIL_OTLP_HTTP_ENDPOINT: `127.0.0.1:${otlp}`, VIGIL_HEALTH_ENDPOINT: `127.0.0.1:${health}`, VIGIL_METRICS_ADDRESS: `127.0.0.1:${metrics}` },
    });
    try {
      await waitFor(async () => {
        if (vigil.child.exitCode !== null) throw new Error(`exited ${vigil.child.exitCode}: ${vigil.stderr()}`);
        return (await fetch(`http://127.0.0.1:${health}/healthz`)).status === 200 ? true : undefined;
      }, 'vigil run (compiled) to be ready');
      const tb = 'Traceback (most recent call last):\n  File "/tmp/job.py", line 1, in <module>\nZeroDivisionError: division by zero';
      for (const time of [Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 1, 0, 0, 5)]) {
        const res = await postLogs(`http://127.0.0.1:${otlp}/v1/logs`, otlpLogs([{ time, body: tb, session: 's1' }]));
        assert.equal(res.status, 200, await res.text());
      }
      const events = await waitFor(() => {
        const file = join(dir, 'work-events.jsonl');
        const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
        return lines.length ? lines.map((l) => JSON.parse(l) as { type: string; data: { signature: string; count: number } }) : undefined;
      }, 'the work event');
      assert.deepEqual(
        events.map((e) => [e.type, e.data.signature, e.data.count]),
        [['dev.vigil.work.created', 'ZeroDivisionError: division by zero', 2]],
      );
      assert.ok(existsSync(join(dir, '.vigil/state.db')), 'the state lives in the working directory');
    } finally {
      vigil.child.kill('SIGTERM');
    }
    assert.equal(await vigil.exited, 0, vigil.stderr());
  });

  test('vigil --version names the package version', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const v = spawnVigil(['--version'], { bin: 'dist', cwd: tempDir() });
    assert.equal(await v.exited, 0, v.stderr());
    assert.equal(v.stdout(), `vigil ${pkg.version} (Node.js ${process.version})\n`);
  });

  test('vigil classify (compiled): JSONL in, one result per line out', async () => {
    const c = spawnVigil(['classify'], { bin: 'dist', input: '{"text":"ValueError: x","exit_code":1}\nnot json\n' });
    assert.equal(await c.exited, 0, c.stderr());
    const out = c
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(out.length, 2);
    assert.equal(out[0]!.signature, 'ValueError: x');
    assert.match(String(out[1]!.error), /^line 2: not valid JSON/);
  });
});
