/**
 * The test harness's own helpers (test/helpers/vigil-process.ts): the readiness wait that every
 * end-to-end test uses, with real child processes, the cross-process port claims, and the reader
 * of a work-events file that a running exporter is writing (test/helpers/work-file.ts).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ephemeralLow, freePort, healthy, tempDir, untilReady, type VigilChild } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

/** A child that stands in for vigil: `script` runs in a plain node process. */
function child(script: string): VigilChild {
  const c = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  c.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return { child: c, stdout: () => '', stderr: () => err, exited: new Promise((res) => c.on('exit', (code) => res(code))) };
}

describe('untilReady', () => {
  test('fails at once when the child exits, with the stderr it wrote before exiting', async () => {
    const c = child("process.stderr.write('cannot listen on 127.0.0.1:1\\n'); process.exit(3)");
    const start = Date.now();
    await assert.rejects(
      untilReady(c, async () => false, 'vigil to be ready', 30_000),
      (err: Error) => /exited \(3\)/.test(err.message) && err.message.includes('cannot listen on 127.0.0.1:1'),
    );
    assert.ok(Date.now() - start < 10_000, `took ${Date.now() - start} ms: it waited for the timeout instead of failing at once`);
  });

  test('on a timeout kills the child, so it cannot outlive the test file', async () => {
    const c = child("process.stderr.write('starting\\n'); setInterval(() => {}, 1000)");
    await assert.rejects(
      untilReady(c, async () => false, 'vigil to be ready', 500),
      (err: Error) => /timed out.*killed/s.test(err.message) && err.message.includes('starting'),
    );
    const code = await Promise.race([c.exited, new Promise((r) => setTimeout(() => r('still running'), 5000))]);
    assert.notEqual(code, 'still running');
    assert.equal(c.child.signalCode, 'SIGKILL');
  });

  test('returns once the health check answers 200; errors before that (refused connections) are retried', async () => {
    const c = child('setInterval(() => {}, 1000)');
    const port = await freePort();
    const server = createServer((_req, res) => res.writeHead(200).end());
    setTimeout(() => server.listen(port, '127.0.0.1'), 300);
    try {
      await untilReady(c, healthy(`http://127.0.0.1:${port}`), 'the server', 10_000);
      assert.equal(c.child.exitCode, null, 'a ready child is left running');
    } finally {
      server.close();
      c.child.kill('SIGKILL');
      await c.exited;
    }
  });
});

describe('freePort', () => {
  test('never hands the same port twice in a run, even when the kernel offers it again', async () => {
    const ports = await Promise.all(Array.from({ length: 50 }, () => freePort()));
    assert.equal(new Set(ports).size, ports.length);
  });

  test('a pair for a Redis Cluster node (its port and port + 10,000, the cluster bus): both below the ephemeral range, neither handed again', async (t) => {
    const low = ephemeralLow();
    if (low === undefined) return t.skip('no /proc/sys/net/ipv4/ip_local_port_range here');
    const pairs = await Promise.all(Array.from({ length: 20 }, () => freePort({ alsoFree: 10_000 })));
    const singles = await Promise.all(Array.from({ length: 50 }, () => freePort()));
    for (const port of pairs) assert.ok(port + 10_000 < low, `the bus port ${port + 10_000} of ${port} is in the ephemeral range (from ${low})`);
    const all = [...pairs, ...pairs.map((p) => p + 10_000), ...singles];
    assert.equal(new Set(all).size, all.length, 'a port handed twice');
  });

  test('hands ports the kernel never picks for a port-0 server or an outgoing socket (below its ephemeral range)', async (t) => {
    const low = ephemeralLow();
    if (low === undefined) return t.skip('no /proc/sys/net/ipv4/ip_local_port_range here');
    const claimed = await Promise.all(Array.from({ length: 50 }, () => freePort()));
    for (const port of claimed) assert.ok(port < low, `claimed port ${port} is in the ephemeral range (from ${low})`);
    // What the kernel does hand out, to the servers the tests bind to port 0 while claims are pending.
    const servers = await Promise.all(
      Array.from(
        { length: 100 },
        () =>
          new Promise<Server>((resolve) => {
            const s = createServer();
            s.listen(0, '127.0.0.1', () => resolve(s));
          }),
      ),
    );
    try {
      const taken = servers.map((s) => (s.address() as AddressInfo).port).filter((p) => claimed.includes(p));
      assert.deepEqual(taken, []);
    } finally {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    }
  });
});

describe('writtenJsonLines', () => {
  test('leaves a line still being written for the next read, and throws on a whole line that does not parse', () => {
    const file = join(tempDir(), 'work.jsonl');
    assert.deepEqual(writtenJsonLines(file), [], 'no file yet');
    writeFileSync(file, '{"id":"a"}\n{"id":"b","da');
    assert.deepEqual(writtenJsonLines(file), [{ id: 'a' }]);
    appendFileSync(file, 'ta":1}\n');
    assert.deepEqual(writtenJsonLines(file), [{ id: 'a' }, { id: 'b', data: 1 }]);
    appendFileSync(file, '{"id":"c"\n');
    assert.throws(() => writtenJsonLines(file), /work\.jsonl:3 is not a whole JSON line/);
  });
});
