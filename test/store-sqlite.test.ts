/** The SQLite store on real files: the conformance suite, then locks and damaged files. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import Database from 'better-sqlite3';
import { SCHEMA_VERSION } from '../src/store/sqlite/schema.ts';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { isVigilError } from '../src/errors.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import type { StateStore } from '../src/store/types.ts';
import { storeConformance } from './helpers/store-conformance.ts';
import { CAN_MOUNT, mountTmpfs, NO_MOUNT_REASON, type Tmpfs } from './helpers/faults.ts';
import { event } from './helpers/pages.ts';
import { freePort, healthy, ROOT, spawnVigil, tempDir, untilReady, waitFor, writeConfig } from './helpers/vigil-process.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });

storeConformance('sqlite', async (opts) => new SqliteStore(config(join(tempDir(), 'state.db')), undefined, opts?.now), {
  reopen: async (store: StateStore) => new SqliteStore(config((store as SqliteStore).file)),
});

describe('sqlite store: schema migration', () => {
  /** A state file made by the version-1 store (test/fixtures/sqlite-v1.sql is its `.dump`). */
  function v1File(): string {
    const file = join(tempDir(), 'state.db');
    const db = new Database(file);
    db.exec(readFileSync(join(ROOT, 'test/fixtures/sqlite-v1.sql'), 'utf8'));
    db.close();
    return file;
  }

  test('a version-1 file opens, migrates to the current version and keeps all its state', async () => {
    const file = v1File();
    const store = new SqliteStore(config(file));
    await store.open();
    try {
      const version = new Database(file, { readonly: true });
      assert.equal((version.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string }).value, String(SCHEMA_VERSION));
      version.close();
      assert.deepEqual(
        (await store.readPage('logs', 'S', 10)).map((e) => e.event.eventId),
        ['v1-b', 'v1-c'],
        'the backlog after the v1 cursor',
      );
      assert.equal((await store.loadGroups(['g_v1'])).get('g_v1')!.openWorkId, 'w_v1');
      assert.deepEqual(
        (await store.readOutbox('logs', 'file/work', 10)).map((o) => o.id),
        ['f_v1'],
      );
      assert.deepEqual(await store.append('logs', [event({ id: 'v1-a', time: 1000, partition: 'S' })]), { appended: 0, duplicates: 1 }, 'dedupe ids kept');
      // The new tables work, in the same commit as the old ones.
      const [b] = await store.readPage('logs', 'S', 1);
      await store.commit({
        pipeline: 'logs',
        partition: 'S',
        cursor: b!.id,
        groups: [],
        turns: [],
        revisions: [],
        outbox: [],
        failures: [],
        state: [{ namespace: 'watchdog', key: 'run-1', value: { attempts: 1 }, version: 1 }],
        timers: { set: [{ id: 'retry:run-1', owner: 'watchdog', partition: 'S', due: 5000, payload: null }] },
      });
      assert.equal((await store.loadState('watchdog', ['run-1'])).get('run-1')!.version, 1);
      assert.deepEqual(
        (await store.dueTimers('logs', 5000, 10)).timers.map((t) => t.id),
        ['retry:run-1'],
      );
      const st = await store.status();
      assert.equal(st.groups, 1);
      assert.deepEqual(st.pipelines.find((p) => p.pipeline === 'logs')!.timers, { pending: 1, nextDue: 5000 });
    } finally {
      await store.close();
    }
    // Opening again is a no-op migration.
    const again = new SqliteStore(config(file));
    await again.open();
    assert.equal((await again.loadState('watchdog', ['run-1'])).get('run-1')!.version, 1);
    await again.close();
  });

  test('a new file is made with 8 KiB pages; a file made with other pages keeps them', async () => {
    const pageSize = (file: string) => {
      const db = new Database(file, { readonly: true });
      try {
        return db.pragma('page_size', { simple: true });
      } finally {
        db.close();
      }
    };
    const fresh = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(fresh));
    await store.open();
    await store.append('logs', [event({ id: 'n-1', time: 1000, partition: 'S' })]);
    await store.close();
    assert.equal(pageSize(fresh), 8192);
    // The version-1 fixture was made with SQLite's default, 4 KiB: migrated and written, it keeps them.
    const old = v1File();
    assert.equal(pageSize(old), 4096);
    const again = new SqliteStore(config(old));
    await again.open();
    await again.append('logs', [event({ id: 'o-1', time: 1000, partition: 'S' })]);
    assert.deepEqual(
      (await again.readPage('logs', 'S', 10)).map((e) => e.event.eventId),
      ['v1-b', 'v1-c', 'o-1'],
    );
    await again.close();
    assert.equal(pageSize(old), 4096);
  });

  test('`vigil status` (read-only) reads a version-1 file without migrating it; a newer version is a clear error', async () => {
    const file = v1File();
    const ro = new SqliteStore(config(file));
    await ro.open({ readOnly: true });
    try {
      const st = await ro.status();
      assert.equal(st.groups, 1);
      assert.deepEqual(st.state, []);
      assert.deepEqual(st.pipelines.find((p) => p.pipeline === 'logs')!.timers, { pending: 0, nextDue: null });
      assert.equal((await ro.loadState('watchdog', ['x'])).size, 0);
    } finally {
      await ro.close();
    }
    const db = new Database(file);
    assert.equal((db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string }).value, '1', 'status migrated nothing');
    db.prepare("UPDATE meta SET value = '99' WHERE key = 'schema_version'").run();
    db.close();
    await assert.rejects(
      new SqliteStore(config(file)).open(),
      (err: unknown) => isVigilError(err, 'VIGIL_STORE_CORRUPT') && /version 99/.test(err.message) && err.message.includes(file),
    );
  });
});

describe('sqlite store: locks, damage, status beside a running vigil', () => {
  test('a lock held by another process beyond busy_timeout is a retryable error naming the file', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore({ ...config(file), busy_timeout: 200 });
    await store.open();
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = require('better-sqlite3')(${JSON.stringify(file)}); db.exec('BEGIN EXCLUSIVE'); db.exec("INSERT INTO meta VALUES ('lock', 'held')"); console.log('locked'); setInterval(() => {}, 1000);`,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve) => holder.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve()));
      const err = await store.append('logs', [event({ id: 'x', time: 1 })]).then(
        () => assert.fail('append must fail while another process holds the write lock'),
        (e: unknown) => e,
      );
      assert.ok(isVigilError(err, 'VIGIL_STORE_UNAVAILABLE') && err.transient, String(err));
      assert.ok(err.message.includes(file), err.message);
      assert.match(err.message, /locked by another process/);
    } finally {
      holder.kill('SIGKILL');
      await new Promise((r) => holder.once('exit', r));
    }
    // The holder died mid-transaction: its write is rolled back and the store goes on.
    assert.deepEqual(await store.append('logs', [event({ id: 'x', time: 1 })]), { appended: 1, duplicates: 0 });
    await store.close();
  });

  test('a damaged file is a clear error naming it, at open and from `vigil run`', async () => {
    const dir = tempDir();
    const good = join(dir, 'state.db');
    const store = new SqliteStore(config(good));
    await store.open();
    await store.append('logs', [event({ id: 'x', time: 1 })]);
    await store.close();
    const damaged = join(dir, 'damaged.db');
    copyFileSync(good, damaged);
    const fd = openSync(damaged, 'r+');
    writeSync(fd, Buffer.from('this is not a database, just garbage written over the header'), 0, undefined, 0);
    closeSync(fd);
    const broken = new SqliteStore(config(damaged));
    await assert.rejects(broken.open(), (err: unknown) => isVigilError(err, 'VIGIL_STORE_CORRUPT') && err.message.includes(damaged));

    const cfg = writeConfig(
      dir,
      `receivers:\n  otlp: { protocols: { http: { endpoint: 127.0.0.1:${await freePort()} } } }\nexporters:\n  debug: {}\nstate:\n  sqlite: { path: ${damaged} }\nservice:\n  pipelines:\n    logs: { receivers: [otlp], exporters: [debug] }\n`,
    );
    const vigil = spawnVigil(['run', '-c', cfg]);
    assert.equal(await vigil.exited, 1);
    assert.ok(vigil.stderr().includes(damaged), vigil.stderr());
    assert.match(vigil.stderr(), /VIGIL_STORE_CORRUPT/);
  });

  test('`vigil status` reads the file while vigil writes it, and names a missing file', async () => {
    const dir = tempDir();
    const [otlp, health] = [await freePort(), await freePort()];
    const file = join(dir, 'state', 'vigil.db');
    const cfg = writeConfig(
      dir,
      `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } }
processors:
  classify: {}
  recurrence: {}
exporters:
  file/work: { path: ${join(dir, 'work.jsonl')} }
extensions:
  health_check: { endpoint: 127.0.0.1:${health} }
state:
  sqlite: { path: ${file} }
service:
  extensions: [health_check]
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/work] }
`,
    );
    const missing = spawnVigil(['status', '-c', cfg]);
    assert.equal(await missing.exited, 1);
    assert.ok(missing.stderr().includes(file), missing.stderr());
    assert.ok(!existsSync(file), 'status creates nothing');

    const vigil = spawnVigil(['run', '-c', cfg]);
    try {
      await untilReady(vigil, healthy(`http://127.0.0.1:${health}`));
      const body = (uid: string, time: number) => otlpLogs([{ time, body: 'KeyError: missing key', session: 'st', uid }], { 'service.name': 'status-agent' });
      for (const [uid, time] of [
        ['s1', 1_000],
        ['s2', 2_000],
      ] as const) {
        const res = await postLogs(`http://127.0.0.1:${otlp}/v1/logs`, body(uid, time));
        assert.equal(res.status, 200);
      }
      const out = await waitFor(async () => {
        const status = spawnVigil(['status', '-c', cfg]);
        if ((await status.exited) !== 0) throw new Error(status.stderr());
        return /open work: 1/.test(status.stdout()) && /partition st: cursor \d+, lag 0/.test(status.stdout()) ? status.stdout() : undefined;
      }, 'status to show the processed partition');
      assert.match(out, /store: sqlite/);
      assert.match(out, /groups: 1/);
      assert.match(out, /exporter file\/work: outbox cursor 1, lag 0/);
    } finally {
      vigil.child.kill('SIGTERM');
      assert.equal(await vigil.exited, 0, vigil.stderr());
    }
  });
});

describe('sqlite store: group commit of appends', () => {
  const appendsOf = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => [event({ id: `${prefix}${i}`, time: i + 1, partition: `p${i % 4}` })]);
  /** Bytes of the write-ahead log: every transaction adds its own frames (pages) to it. */
  const walBytes = (file: string) => statSync(`${file}-wal`).size;

  test('concurrent appends share one transaction: one set of WAL frames, not one per request', async () => {
    const grouped = new SqliteStore(config(join(tempDir(), 'state.db')));
    const single = new SqliteStore(config(join(tempDir(), 'state.db')));
    await grouped.open();
    await single.open();
    try {
      const [groupedBefore, singleBefore] = [walBytes(grouped.file), walBytes(single.file)];
      const results = await Promise.all(appendsOf(40, 'g').map((events) => grouped.append('logs', events)));
      assert.deepEqual(
        results,
        Array.from({ length: 40 }, () => ({ appended: 1, duplicates: 0 })),
      );
      for (const events of appendsOf(40, 's')) assert.deepEqual(await single.append('logs', events), { appended: 1, duplicates: 0 });
      const [groupedGrowth, singleGrowth] = [walBytes(grouped.file) - groupedBefore, walBytes(single.file) - singleBefore];
      assert.ok(groupedGrowth * 5 < singleGrowth, `one transaction wrote ${groupedGrowth} WAL bytes, 40 transactions ${singleGrowth}`);
      assert.equal(await grouped.pendingCount('logs'), 40);
    } finally {
      await grouped.close();
      await single.close();
    }
  });

  test('in one group, a redelivery is a duplicate of the first, and an append that fails fails alone', async () => {
    const store = new SqliteStore(config(join(tempDir(), 'state.db')));
    await store.open();
    try {
      const broken = event({ id: 'broken', time: 1 });
      (broken.payload as Record<string, unknown>).size = 10n; // JSON cannot hold a BigInt: this append throws
      const outcomes = await Promise.allSettled([
        store.append('logs', [event({ id: 'a', time: 1 }), event({ id: 'b', time: 2 })]),
        store.append('logs', [broken]),
        store.append('logs', [event({ id: 'b', time: 2 }), event({ id: 'c', time: 3 })]),
      ]);
      assert.deepEqual(outcomes[0], { status: 'fulfilled', value: { appended: 2, duplicates: 0 } });
      assert.equal(outcomes[1]!.status, 'rejected');
      assert.deepEqual(outcomes[2], { status: 'fulfilled', value: { appended: 1, duplicates: 1 } });
      const page = await store.readPage('logs', 'session-1', 10);
      assert.deepEqual(
        page.map((e) => e.event.eventId),
        ['a', 'b', 'c'],
      );
    } finally {
      await store.close();
    }
  });

  test('an append that fails part-way leaves nothing of itself, alone or in a group; a refused state write refuses only its append', async () => {
    const store = new SqliteStore(config(join(tempDir(), 'state.db')));
    await store.open();
    try {
      const broken = (id: string) => {
        const e = event({ id, time: 9 });
        (e.payload as Record<string, unknown>).size = 10n; // JSON cannot hold a BigInt: the append throws at this record
        return e;
      };
      // Alone: the group's one transaction is rolled back; its first record's id is not taken.
      await assert.rejects(store.append('logs', [event({ id: 'x', time: 1 }), broken('bad-1')]));
      // In a group: run again with a savepoint per append, so only the broken one fails.
      const outcomes = await Promise.allSettled([
        store.append('logs', [event({ id: 'y', time: 2 })]),
        store.append('logs', [event({ id: 'z', time: 3 }), broken('bad-2')]),
        store.append('logs', [event({ id: 'w', time: 4 })], { state: [{ namespace: 'ns', key: 'k', value: 1, version: 2 }] }),
        store.append('logs', [event({ id: 'v', time: 5 })], { state: [{ namespace: 'ns', key: 'k', value: 1, version: 1 }] }),
      ]);
      assert.deepEqual(outcomes[0], { status: 'fulfilled', value: { appended: 1, duplicates: 0 } });
      assert.equal(outcomes[1]!.status, 'rejected');
      assert.equal(outcomes[2]!.status, 'rejected');
      assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /version/);
      assert.deepEqual(outcomes[3], { status: 'fulfilled', value: { appended: 1, duplicates: 0 } });
      assert.deepEqual(await store.append('logs', [event({ id: 'x', time: 1 }), event({ id: 'z', time: 3 }), event({ id: 'w', time: 4 })]), {
        appended: 3,
        duplicates: 0,
      });
      const page = await store.readPage('logs', 'session-1', 10);
      assert.deepEqual(
        page.map((e) => e.event.eventId),
        ['y', 'v', 'x', 'z', 'w'],
      );
      assert.equal((await store.loadState('ns', ['k'])).get('k')?.version, 1);
    } finally {
      await store.close();
    }
  });

  test('appends accepted before close are committed by it', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file));
    await store.open();
    const pending = store.append('logs', [event({ id: 'late', time: 1 })]);
    await store.close();
    assert.deepEqual(await pending, { appended: 1, duplicates: 0 });
    const reopened = new SqliteStore(config(file));
    await reopened.open();
    assert.equal(await reopened.pendingCount('logs'), 1);
    await reopened.close();
  });
});

describe('sqlite store: its threads do not keep the process alive', () => {
  /**
   * Runs `body` in a child process (with the TypeScript loader, from the repository) and resolves
   * with its exit code, or null when it was still running after `ms`. The store's threads are
   * unref'd: a program that never closes its store still ends (a test that failed before its
   * close used to hold its file's process until the runner's timeout: README, Performance, round 46).
   */
  function exitsOnItsOwn(body: string, ms = 60_000): Promise<{ code: number | null; stdout: string }> {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', body], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve({ code: null, stdout });
      }, ms);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout });
      });
    });
  }

  const open = (dir: string) => `
    import { SqliteStore } from './src/store/sqlite/store.ts';
    import { event } from './test/helpers/pages.ts';
    const store = new SqliteStore(${JSON.stringify(config(join(dir, 'state.db')))});
    await store.open();`;

  test('an open store (its checkpoint worker running) that is never closed', async () => {
    const { code, stdout } = await exitsOnItsOwn(`${open(tempDir())}
      console.log('opened');`);
    assert.equal(stdout.trim(), 'opened');
    assert.equal(code, 0, 'the process was still running 60 s after its last statement');
  });

  test('a store that appended and committed a page (its WAL sync worker started too), never closed', async () => {
    const { code, stdout } = await exitsOnItsOwn(`${open(tempDir())}
      for (let i = 0; i < 5; i++) await store.append('logs', [event({ id: 'e-' + i, time: 1000 + i })]);
      const page = await store.readPage('logs', 'session-1', 2);
      await store.commit({ pipeline: 'logs', partition: 'session-1', cursor: page[1].id, groups: [], turns: [], revisions: [], outbox: [], failures: [] });
      console.log('committed', page.length);`);
    assert.equal(stdout.trim(), 'committed 2');
    assert.equal(code, 0, 'the process was still running 60 s after its last statement');
  });

  test('a checkpoint worker whose counts are awaited holds the process until they come, then not', async () => {
    const { code, stdout } = await exitsOnItsOwn(`${open(tempDir())}
      import { Checkpointer } from './src/store/sqlite/checkpointer.ts';
      const checkpointer = new Checkpointer({ file: store.file, busyTimeout: 1000, walLimit: 8 * 1024 * 1024, onFailure() {} });
      const stats = await checkpointer.stats();
      console.log('passes', stats.passes);`);
    // Without the hold, the process ends at the await (nothing else keeps it alive) and prints nothing.
    assert.equal(stdout.trim(), 'passes 0');
    assert.equal(code, 0, 'the process was still running 60 s after its last statement');
  });

  test('a WAL sync worker started with nothing to sync', async () => {
    const { code, stdout } = await exitsOnItsOwn(`
      import { openSync } from 'node:fs';
      import { WalSyncer } from './src/store/sqlite/wal-syncer.ts';
      const fd = openSync(${JSON.stringify(join(tempDir(), 'log'))}, 'w');
      new WalSyncer({ fd, onSynced() {}, onTimed() {}, onFailed() {}, onStopped() {} });
      console.log('started');`);
    assert.equal(stdout.trim(), 'started');
    assert.equal(code, 0, 'the process was still running 60 s after its last statement');
  });
});

describe('sqlite store: the ingest log is trimmed in batches', () => {
  /** Entries kept in the file at or below their partition's cursor (processed, not yet deleted). */
  function processedLeft(file: string): number {
    const db = new Database(file, { readonly: true });
    try {
      return (
        db
          .prepare(
            'SELECT COUNT(*) AS n FROM ingest_log l JOIN partition_cursors c ON c.pipeline = l.pipeline AND c.partition = l.partition WHERE l.seq <= c.cursor',
          )
          .get() as { n: number }
      ).n;
    } finally {
      db.close();
    }
  }

  test('processed entries are hidden by the cursor until a batch deletes them; counts and reads never see them; a reopen leaves none', async (t) => {
    const file = join(tempDir(), 'state.db');
    // Segments of 32 entries (schema version 4): a segment goes once every partition passed it.
    const store = new SqliteStore(config(file), undefined, Date.now, { segmentRows: 32 });
    await store.open();
    // Closed even when a check fails.
    t.after(() => store.close());
    const parts = ['A', 'B', 'C'];
    // Interleaved partitions, as sessions arrive: 3 × 50 entries.
    for (let i = 0; i < 150; i++) await store.append('logs', [event({ id: `t-${i}`, time: 1000 + i, partition: parts[i % 3]! })]);
    const commitPage = async (partition: string, n: number) => {
      const page = await store.readPage('logs', partition, n);
      await store.commit({ pipeline: 'logs', partition, cursor: page[page.length - 1]!.id, groups: [], turns: [], revisions: [], outbox: [], failures: [] });
      return page;
    };
    let expected = 150;
    let sawHidden = false;
    const seen = new Set<string>();
    for (let round = 0; round < 25; round++) {
      for (const p of parts) {
        const page = await commitPage(p, 2);
        for (const e of page) {
          assert.ok(!seen.has(e.event.eventId), `entry ${e.event.eventId} read again after its commit`);
          seen.add(e.event.eventId);
        }
        expected -= page.length;
        assert.equal(await store.pendingCount('logs'), expected);
        const backlog = await store.backlog('logs');
        assert.equal(
          backlog.reduce((n, b) => n + b.pending, 0),
          expected,
        );
        const status = await store.status();
        assert.equal(
          status.pipelines[0]!.partitions.reduce((n, b) => n + b.pending, 0),
          expected,
        );
        if (processedLeft(file) > 0) sawHidden = true;
        // Bounded, once the trim under way has run its steps (one a turn of the event loop, so
        // between two of them a count can pass the bound: 98 once, in CI): never more than a
        // batch of commits' entries (32 commits of 2 here) and the processed part of the
        // segment the cursors are in (32 entries).
        await store.settled();
        assert.ok(processedLeft(file) <= 96, `processed entries left: ${processedLeft(file)}`);
      }
    }
    assert.ok(sawHidden, 'trimming is batched (some processed entries waited)');
    assert.equal(expected, 0);
    assert.deepEqual(await store.backlog('logs'), []);
    await store.close();
    assert.equal(processedLeft(file), 0, 'a clean close trims the rest');
  });

  test('entries a killed process left unprocessed-looking are trimmed at the next open, not served again', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file));
    await store.open();
    for (let i = 0; i < 10; i++) await store.append('logs', [event({ id: `k-${i}`, time: 1000 + i, partition: 'K' })]);
    const page = await store.readPage('logs', 'K', 4);
    await store.commit({ pipeline: 'logs', partition: 'K', cursor: page[3]!.id, groups: [], turns: [], revisions: [], outbox: [], failures: [] });
    assert.equal(processedLeft(file), 4, 'the commit left its entries for the next batch');
    // A copy of the file as it is now stands for a process that stopped without closing.
    const copy = join(tempDir(), 'state.db');
    const db = new Database(file, { readonly: true });
    await db.backup(copy);
    db.close();
    await store.close();
    const again = new SqliteStore(config(copy));
    await again.open();
    try {
      assert.equal(processedLeft(copy), 0);
      assert.deepEqual(
        (await again.readPage('logs', 'K', 10)).map((e) => e.event.eventId),
        ['k-4', 'k-5', 'k-6', 'k-7', 'k-8', 'k-9'],
      );
      assert.equal(await again.pendingCount('logs'), 6);
    } finally {
      await again.close();
    }
  });
});

/** A writer store on an 8 MiB tmpfs of its own, unmounted when the test ends (the test closes the store). */
async function storeOnSmallDisk(t: TestContext): Promise<{ disk: Tmpfs; file: string; store: SqliteStore }> {
  const disk = mountTmpfs(8 * 1024 * 1024);
  t.after(() => disk.unmount());
  const file = join(disk.dir, 'state.db');
  const store = new SqliteStore(config(file));
  await store.open();
  return { disk, file, store };
}

describe('sqlite store: the readiness probe after a failed append', { skip: CAN_MOUNT ? false : NO_MOUNT_REASON }, () => {
  test('it needs room for twice the bytes (log and copy), refuses with the reason while there is none, and leaves nothing in the log or beside it', async (t) => {
    const { disk, file, store } = await storeOnSmallDisk(t);
    try {
      const wal = () => statSync(`${file}-wal`).size;
      await store.probeWrite(64 * 1024);
      const walBefore = wal();
      // 3 MB fit on the disk, 6 MB do not.
      const free = disk.freeBytes();
      assert.ok(free > 6 * 1024 * 1024 && free < 12 * 1024 * 1024, `free: ${free}`);
      disk.fill(4 * 1024 * 1024);
      await assert.rejects(store.probeWrite(3 * 1024 * 1024), (err: Error) => {
        assert.ok(isVigilError(err, 'VIGIL_STORE_UNAVAILABLE'));
        assert.match(err.message, /cannot write 6291456 bytes beside SQLite database '.*state\.db': ENOSPC: no space left on device/);
        return true;
      });
      assert.equal(existsSync(`${file}.probe`), false, 'the refused probe left no file');
      await store.probeWrite(1024 * 1024);
      assert.equal(existsSync(`${file}.probe`), false);
      assert.ok(wal() - walBefore < 64 * 1024, `the probe's bytes never went into the log (${walBefore} -> ${wal()} bytes)`);
    } finally {
      await store.close();
    }
  });
});

describe('sqlite store: the log stays copyable on a disk short of space', { skip: CAN_MOUNT ? false : NO_MOUNT_REASON }, () => {
  test('a reader holds the log: writes are refused while its copy still fits; once the reader ends, the writer copies and truncates it and takes writes again', async (t) => {
    const { disk, file, store } = await storeOnSmallDisk(t);
    const reader = new Database(file, { readonly: true });
    try {
      // A read transaction keeps every later commit in the log: no checkpoint may start it over.
      reader.prepare('BEGIN').run();
      reader.prepare('SELECT count(*) FROM meta').get();
      const pad = 'x'.repeat(2000);
      let n = 0;
      const batch = () => Array.from({ length: 50 }, () => event({ time: Date.UTC(2026, 0, 1) + ++n, payload: { state: 'error', message: pad } }));
      let refused: Error | undefined;
      for (let i = 0; i < 100 && refused === undefined; i++) await store.append('logs', batch()).catch((err: Error) => (refused = err));
      assert.ok(refused !== undefined, 'the growing log was refused before 100 batches (5 MB of records, 8 MB disk)');
      assert.ok(isVigilError(refused, 'VIGIL_STORE_UNAVAILABLE') && refused.transient, refused?.message);
      assert.match(
        refused!.message,
        /^the disk of SQLite database '.*state\.db' is short of space: \d+ bytes free, \d+ in its write-ahead log, .*free some space on that disk/,
      );
      assert.ok(store.roomStats()!.refusals >= 1);
      const log = statSync(`${file}-wal`).size;
      assert.ok(disk.freeBytes() >= log, `refused while the log (${log} bytes) can still be copied (${disk.freeBytes()} free)`);

      reader.prepare('COMMIT').run();
      // Taken again at once (the writer checkpoints before the write), and more than the refused batch.
      for (let i = 0; i < 3; i++) await store.append('logs', batch());
      assert.ok(store.roomStats()!.checkpoints >= 1);
      assert.ok(statSync(`${file}-wal`).size < log, `the log was truncated (${log} -> ${statSync(`${file}-wal`).size} bytes)`);
      assert.equal((await store.pendingCount('logs')) % 50, 0);
    } finally {
      reader.close();
      await store.close();
    }
  });
});
