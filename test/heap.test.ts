/**
 * The V8 settings `vigil run` makes for its process (src/service/heap.ts).
 * - The flag set at run time must exist on the Node.js running it: V8 prints "unrecognized flag" to
 *   stderr and goes on without it otherwise.
 * - The young generation: on Node.js 24 the real `vigil run` replaces itself (same process id)
 *   with the process started with the flag; on 20 and 22, whose V8 already sizes it so, it does
 *   not. CI runs this on Node 20, 22 and 24.
 * What the settings do is shown by the benchmarks, not asserted here (README, Performance, rounds
 * 24 and 34).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { needsYoungGenerationRestart, YOUNG_GENERATION_FLAG } from '../src/service/heap.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, type VigilChild, writeConfig } from './helpers/vigil-process.ts';

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

test('tuneHeap: this Node.js knows the flag it sets (nothing on stderr)', () => {
  const child = spawnSync(process.execPath, ['--import', 'tsx', '-e', "const m = await import('./src/service/heap.ts'); m.tuneHeap(); console.log('set');"], {
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout.trim(), 'set');
  assert.equal(child.stderr, '');
});

test('needsYoungGenerationRestart: only on Node.js 24 and later, where execve exists, and when nobody chose a size', () => {
  assert.equal(needsYoungGenerationRestart(24, [], undefined, true), true);
  assert.equal(needsYoungGenerationRestart(26, ['--import', 'tsx'], '--max-old-space-size=4096', true), true);
  assert.equal(needsYoungGenerationRestart(20, [], undefined, true), false, 'Node 20: V8 sizes it at 16 MB already');
  assert.equal(needsYoungGenerationRestart(22, [], undefined, true), false, 'Node 22: V8 sizes it at 16 MB already');
  assert.equal(needsYoungGenerationRestart(24, [], undefined, false), false, 'no process.execve (Windows)');
  assert.equal(needsYoungGenerationRestart(24, [YOUNG_GENERATION_FLAG], undefined, true), false, 'restarted already');
  assert.equal(needsYoungGenerationRestart(24, ['--max-semi-space-size=64'], undefined, true), false, 'the command line chose');
  assert.equal(needsYoungGenerationRestart(24, ['--max_semi_space_size=8'], undefined, true), false, 'underscores are the same flag');
  assert.equal(needsYoungGenerationRestart(24, [], '--max-old-space-size=4096 --max-semi-space-size=32', true), false, 'NODE_OPTIONS chose');
});

/** The arguments of a running process, from Linux's /proc. */
function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

describe('vigil run: the young generation', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  const children: VigilChild[] = [];
  after(() => children.forEach((c) => c.child.kill('SIGKILL')));

  async function start(env: NodeJS.ProcessEnv = {}): Promise<VigilChild> {
    const dir = tempDir();
    const health = await freePort();
    const config = writeConfig(
      dir,
      `receivers:
  otlp:
    protocols:
      http: { endpoint: 127.0.0.1:${await freePort()} }
processors:
  classify: {}
exporters:
  debug: {}
extensions:
  health_check: { endpoint: 127.0.0.1:${health} }
state:
  memory: {}
service:
  extensions: [health_check]
  pipelines:
    logs: { receivers: [otlp], processors: [classify], exporters: [debug] }
`,
    );
    const vigil = spawnVigil(['run', '-c', config], { env });
    children.push(vigil);
    await untilReady(vigil, healthy(`http://127.0.0.1:${health}`));
    return vigil;
  }

  test(
    `the process that answers is the one spawned, started with ${YOUNG_GENERATION_FLAG} on Node.js 24 and later only; SIGKILL ends it`,
    { timeout: 60_000 },
    async () => {
      const vigil = await start({ NODE_OPTIONS: '' });
      const args = commandLine(vigil.child.pid!);
      assert.ok(args.includes('run'), `the spawned pid runs vigil: ${args.join(' ')}`);
      assert.equal(args.includes(YOUNG_GENERATION_FLAG), NODE_MAJOR >= 24, `Node.js ${process.version}: ${args.join(' ')}`);
      if (NODE_MAJOR >= 24) assert.equal(args[1], YOUNG_GENERATION_FLAG, 'the flag comes first, before the loader and the script');
      vigil.child.kill('SIGKILL');
      assert.equal(await vigil.exited, null, 'killed by the signal, not exited');
      assert.equal(vigil.child.signalCode, 'SIGKILL');
    },
  );

  test('a size chosen in NODE_OPTIONS stands: no restart', { timeout: 60_000 }, async () => {
    const vigil = await start({ NODE_OPTIONS: '--max-semi-space-size=8' });
    const args = commandLine(vigil.child.pid!);
    assert.ok(args.includes('run'), args.join(' '));
    assert.ok(!args.some((a) => a.startsWith('--max-semi-space-size')), `not restarted: ${args.join(' ')}`);
    vigil.child.kill('SIGKILL');
    await vigil.exited;
  });
});
