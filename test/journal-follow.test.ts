/**
 * The journal follower (src/receivers/journal/follow.ts), step by step on real files: what the
 * offset, the file identity and the tail fingerprint tell after an append, a rewrite in place, a
 * rename over the path, a rotation with lines still unread in the old file, and lines that cross
 * read chunks or exceed the line bound.
 */
import assert from 'node:assert/strict';
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FollowedFile } from '../src/receivers/journal/follow.ts';
import { caseLine } from './helpers/journal.ts';
import { tempDir } from './helpers/vigil-process.ts';

const text = (ns: number[]) => ns.map((n) => caseLine(n) + '\n').join('');
const caseIds = (r: { lines: Array<{ bytes: Buffer }> }) => r.lines.map((l) => (JSON.parse(l.bytes.toString()) as { case_id: string }).case_id.slice(5));

async function readAll(f: FollowedFile, max = 1000, maxLine = 1 << 20) {
  const r = await f.read(max, maxLine);
  f.offset = r.next;
  return r;
}

/**
 * Rewrites the file in place with `content` right after the follower's first read at a position
 * `at` accepts (a read of its held handle): the race of a consumer's compaction with a read.
 * Returns whether it happened.
 */
function rewriteAfterRead(f: FollowedFile, path: string, at: (position: number) => boolean, content: string): () => boolean {
  const fh = (f as unknown as { fh: { read: (...a: unknown[]) => Promise<unknown> } }).fh;
  const read = fh.read.bind(fh);
  let rewritten = false;
  fh.read = async (...a: unknown[]) => {
    const r = await read(...a);
    if (!rewritten && typeof a[3] === 'number' && at(a[3])) {
      rewritten = true;
      writeFileSync(path, content);
    }
    return r;
  };
  return () => rewritten;
}

describe('following one journal', () => {
  test('appends are read on from the offset; a partial line is left for later', async () => {
    const path = join(tempDir(), 'j.jsonl');
    writeFileSync(path, text([0, 1]) + caseLine(2).slice(0, 10));
    const f = new FollowedFile(path, undefined);
    assert.deepEqual(await f.check('beginning'), { status: 'ready' });
    const r = await readAll(f);
    assert.deepEqual(caseIds(r), ['00000', '00001']);
    assert.equal(r.remaining, 10);
    appendFileSync(path, caseLine(2).slice(10) + '\n' + text([3]));
    assert.deepEqual(await f.check('beginning'), { status: 'ready' });
    assert.deepEqual(caseIds(await readAll(f)), ['00002', '00003']);
    await f.release();
  });

  test('a rewrite in place to a size past the offset is told from an append by the tail', async () => {
    const path = join(tempDir(), 'j.jsonl');
    writeFileSync(path, text([0, 1, 2]));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    await readAll(f);
    // The consumer keeps 1..2 and the runtime has already appended 3..6: the file is longer than before.
    writeFileSync(path, text([1, 2, 3, 4, 5, 6]));
    assert.deepEqual(await f.check('beginning'), { status: 'ready', rewrite: 'rewritten' });
    assert.deepEqual(caseIds(await readAll(f)), ['00003', '00004', '00005', '00006']);
    await f.release();
  });

  test('a rewrite in place between the check and the read: nothing is taken from the shifted file, and the next check resynchronizes', async () => {
    const path = join(tempDir(), 'j.jsonl');
    writeFileSync(path, text([0, 1, 2]));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    await readAll(f);
    appendFileSync(path, text([3, 4]));
    assert.deepEqual(await f.check('beginning'), { status: 'ready' });
    // The consumer keeps 3.. and the runtime appends 5..7 after the check, before the read: the
    // old offset now points into the new content, past kept lines never read (a journal-crash run lost cases so).
    writeFileSync(path, text([3, 4, 5, 6, 7]));
    const torn = await readAll(f);
    assert.deepEqual(torn.lines, [], 'no line is taken at the old offset in the rewritten file');
    assert.deepEqual(await f.check('beginning'), { status: 'ready', rewrite: 'rewritten' });
    assert.deepEqual(caseIds(await readAll(f)), ['00003', '00004', '00005', '00006', '00007']);
    await f.release();
  });

  test('a rewrite in place after the read looked back at the stored tail: the new tail is of the lines read, so the next check resynchronizes', async () => {
    const path = join(tempDir(), 'j.jsonl');
    writeFileSync(path, text([0, 1, 2]));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    await readAll(f);
    appendFileSync(path, text([3, 4, 5, 6]));
    assert.deepEqual(await f.check('beginning'), { status: 'ready' });
    // The consumer keeps 2.. and the runtime appends 7..9, in place, right after the read has
    // compared the bytes before its offset with the stored tail (its last look at the file before
    // it hands out lines 3 and 4). A tail fingerprint read from the file after that look is one of
    // the new content at the old offset: every later check finds it in place and reading goes on
    // there, past kept lines 5 and 6 (journal-crash lost cases 32 and 33 so in CI, seed 67203842).
    const offset = f.offset!.offset;
    const rewritten = rewriteAfterRead(f, path, (position) => position < offset, text([2, 3, 4, 5, 6, 7, 8, 9]));
    const r = await readAll(f, 2);
    assert.ok(rewritten(), 'the read looked back at the stored tail');
    assert.deepEqual(caseIds(r), ['00003', '00004'], 'lines read before the rewrite');
    assert.deepEqual(await f.check('beginning'), { status: 'ready', rewrite: 'rewritten' });
    const rest = await readAll(f);
    assert.deepEqual(
      rest.lines.map((l) => l.bytes.toString().slice(0, 23)),
      [5, 6, 7, 8, 9].map((n) => caseLine(n).slice(0, 23)),
      'every kept line after 4, whole',
    );
    await f.release();
  });

  test('a rewrite in place between two chunks of a first read (no stored tail to look back at): no line of either content is taken, and every kept line is read whole', async () => {
    const path = join(tempDir(), 'j.jsonl');
    const all = Array.from({ length: 150 }, (_, n) => n);
    writeFileSync(path, text(all)); // about 140 KB: three chunks of 64 KiB
    const f = new FollowedFile(path, undefined);
    assert.deepEqual(await f.check('beginning'), { status: 'ready' });
    // The consumer keeps 20.. and the runtime appends 150..159, in place, right after the read's first chunk.
    const keptLines = [...all.slice(20), ...Array.from({ length: 10 }, (_, n) => 150 + n)];
    const rewritten = rewriteAfterRead(f, path, (position) => position === 0, text(keptLines));
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      await f.check('beginning');
      const r = await readAll(f);
      seen.push(...caseIds(r)); // a fragment of a misaligned line would not parse
    }
    assert.ok(rewritten());
    const kept = keptLines.map((n) => String(n).padStart(5, '0'));
    assert.deepEqual(
      kept.filter((id) => !seen.includes(id)),
      [],
      'no kept line skipped',
    );
    await f.release();
  });

  test('a file renamed over the path: found by its tail beyond the first read chunk', async () => {
    const dir = tempDir();
    const path = join(dir, 'j.jsonl');
    const many = Array.from({ length: 400 }, (_, i) => i);
    writeFileSync(path, text(many));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    assert.equal((await readAll(f)).lines.length, 400);
    writeFileSync(join(dir, 'tmp'), text([...many.slice(3), 400, 401]));
    renameSync(join(dir, 'tmp'), path);
    // The handle still holds the old file: it is read to its end first (nothing new there), then released.
    assert.deepEqual(await f.check('beginning'), { status: 'moved' });
    assert.equal((await readAll(f)).lines.length, 0);
    await f.release();
    assert.deepEqual(await f.check('beginning'), { status: 'ready', rewrite: 'replaced' });
    assert.deepEqual(caseIds(await readAll(f)), ['00400', '00401']);
    await f.release();
  });

  test('rotation with lines still unread in the old file: they are read through the held handle, then the new file from its top', async () => {
    const dir = tempDir();
    const path = join(dir, 'j.jsonl');
    writeFileSync(path, text([0, 1]));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    await readAll(f);
    appendFileSync(path, text([2, 3]));
    renameSync(path, join(dir, 'j.jsonl.1'));
    writeFileSync(path, text([4]));
    assert.deepEqual(await f.check('beginning'), { status: 'moved' });
    assert.deepEqual(caseIds(await readAll(f)), ['00002', '00003']);
    await f.release();
    assert.deepEqual(await f.check('beginning'), { status: 'ready', rewrite: 'replaced' });
    assert.deepEqual(caseIds(await readAll(f)), ['00004']);
    await f.release();
  });

  test('deleted: absent, and the offset is kept for when a journal appears again', async () => {
    const dir = tempDir();
    const path = join(dir, 'j.jsonl');
    writeFileSync(path, text([0]));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    await readAll(f);
    renameSync(path, join(dir, 'gone'));
    assert.deepEqual(await f.check('beginning'), { status: 'moved' });
    await readAll(f);
    await f.release();
    assert.deepEqual(await f.check('beginning'), { status: 'absent' });
    assert.ok(f.offset!.offset > 0);
    writeFileSync(path, text([1]));
    assert.deepEqual(await f.check('beginning'), { status: 'ready', rewrite: 'replaced' });
    assert.deepEqual(caseIds(await readAll(f)), ['00001']);
    await f.release();
  });

  test('an overlong line is skipped across reads and chunks, and the skip survives in the offset', async () => {
    const path = join(tempDir(), 'j.jsonl');
    writeFileSync(path, text([0]) + 'x'.repeat(200_000));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    const r1 = await readAll(f, 1000, 4096);
    assert.deepEqual(caseIds(r1), ['00000']);
    assert.equal(r1.overlong.length, 1);
    assert.equal(r1.next.skip, true);
    // A restart in the middle: a new follower from the stored offset goes on skipping.
    await f.release();
    const g = new FollowedFile(path, r1.next);
    appendFileSync(path, 'y'.repeat(10) + '\n' + text([1]));
    await g.check('beginning');
    const r2 = await readAll(g, 1000, 4096);
    assert.deepEqual(caseIds(r2), ['00001']);
    assert.equal(r2.overlong.length, 0, 'reported once');
    assert.equal(r2.next.skip, undefined);
    await g.release();
  });

  test('start_at end positions after the last complete line; the tail is that line (and blank lines after it)', async () => {
    const path = join(tempDir(), 'j.jsonl');
    writeFileSync(path, text([0, 1]) + '\n  \n' + '{"partial');
    const f = new FollowedFile(path, undefined);
    await f.check('end');
    assert.equal(f.offset!.offset, Buffer.byteLength(text([0, 1]) + '\n  \n'));
    assert.equal(f.offset!.tailLen, Buffer.byteLength(caseLine(1) + '\n\n  \n'));
    await f.release();
  });

  test('lines that share their ends (the same evidence, the same contracts) are told apart: the tail is the whole last line', async () => {
    const dir = tempDir();
    const path = join(dir, 'j.jsonl');
    // Short lines alike but for their id at the start; a rewrite keeps the last two.
    const row = (i: number) => `{"case_id":"c${i}","error_kind":"stale_browser_ref","occurred_at_ms":1,"observation":{"evidence":"ref e12 is stale"}}\n`;
    writeFileSync(path, [0, 1, 2, 3].map(row).join(''));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    assert.equal((await readAll(f)).lines.length, 4);
    writeFileSync(join(dir, 'tmp'), [2, 3, 4].map(row).join(''));
    renameSync(join(dir, 'tmp'), path);
    assert.deepEqual(await f.check('beginning'), { status: 'moved' });
    await readAll(f);
    await f.release();
    assert.deepEqual(await f.check('beginning'), { status: 'ready', rewrite: 'replaced' });
    const r = await readAll(f);
    assert.deepEqual(
      r.lines.map((l) => l.bytes.toString()),
      [row(4).trimEnd()],
    );
    await f.release();
  });

  test('a line ending in blank lines and a kept tail that begins with them', async () => {
    const dir = tempDir();
    const path = join(dir, 'j.jsonl');
    writeFileSync(path, text([0, 1]) + '\n\n');
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    await readAll(f);
    writeFileSync(join(dir, 'tmp'), text([1]) + '\n\n' + text([2]));
    renameSync(join(dir, 'tmp'), path);
    await f.check('beginning');
    await f.release();
    await f.check('beginning');
    assert.deepEqual(caseIds(await readAll(f)), ['00002']);
    await f.release();
  });

  test('a malformed line that repeats after the offset: the tail starts at the last case, so a compaction that keeps an unread case is read from it (found by a crash test, seed 784534252)', async () => {
    const dir = tempDir();
    const path = join(dir, 'j.jsonl');
    const broken = '{"case_id": "broken", "error_kind":';
    const isCase = (bytes: Buffer) => {
      try {
        return typeof (JSON.parse(bytes.toString()) as { case_id?: unknown }).case_id === 'string';
      } catch {
        return false;
      }
    };
    const read = async () => {
      const r = await f.read(1000, 1 << 20, isCase);
      f.offset = r.next;
      return r;
    };
    writeFileSync(path, text([0, 1]) + broken + '\n' + broken + '\n');
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    assert.equal((await read()).lines.length, 4);
    const committed = f.offset;
    await f.release();
    // vigil is SIGKILLed. While it is away the runtime appends case 2 and the same malformed line
    // again, and the consumer (which saw 0 and 1 delivered) compacts by rename, keeping from case 2.
    appendFileSync(path, text([2]) + broken + '\n');
    writeFileSync(join(dir, 'tmp'), text([2]) + broken + '\n' + text([3]));
    renameSync(join(dir, 'tmp'), path);
    // Restarted from the committed offset (the old file is gone).
    const g = new FollowedFile(path, committed);
    assert.deepEqual(await g.check('beginning'), { status: 'ready', rewrite: 'replaced' });
    const r = await g.read(1000, 1 << 20, isCase);
    assert.deepEqual(
      r.lines.filter((l) => isCase(l.bytes)).map((l) => (JSON.parse(l.bytes.toString()) as { case_id: string }).case_id.slice(5)),
      ['00002', '00003'],
      'case 2 is not skipped: a window of the malformed line alone would be found after it',
    );
    await g.release();
  });

  test('with only malformed lines after the last case, the window grows over them; a window found again resumes right after it', async () => {
    const dir = tempDir();
    const path = join(dir, 'j.jsonl');
    const isCase = (bytes: Buffer) => bytes.toString().startsWith('{"case_id":"');
    writeFileSync(path, text([0]));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    f.offset = (await f.read(1000, 1 << 20, isCase)).next;
    const firstLen = f.offset.tailLen;
    appendFileSync(path, 'not json\n');
    await f.check('beginning');
    f.offset = (await f.read(1000, 1 << 20, isCase)).next;
    assert.equal(f.offset.tailLen, firstLen + 'not json\n'.length, 'the window covers the case and the malformed line after it');
    // Rewritten in place with the same two lines, then a new case: reading resumes at case 1.
    writeFileSync(path, text([0]) + 'not json\n' + text([1]));
    assert.deepEqual(await f.check('beginning'), { status: 'ready' }, 'an append: the window is still where it was');
    writeFileSync(path, 'garbage\n' + text([0]) + 'not json\n' + text([1]));
    assert.deepEqual(await f.check('beginning'), { status: 'ready', rewrite: 'rewritten' });
    const r = await f.read(1000, 1 << 20, isCase);
    assert.deepEqual(caseIds(r), ['00001']);
    await f.release();
  });

  test('a rewrite in place seen between its truncation and its write: the kept lines are found, not read again', async () => {
    const path = join(tempDir(), 'j.jsonl');
    writeFileSync(path, text([0, 1, 2, 3]));
    const f = new FollowedFile(path, undefined);
    await f.check('beginning');
    await readAll(f);
    const before = f.offset;
    writeFileSync(path, ''); // the consumer's open(…, 'w') truncated it; its write has not come yet
    assert.deepEqual(await f.check('beginning'), { status: 'ready' }, 'an empty file: wait for its content');
    // The consumer's write lands between that check and the read: nothing is read past the old
    // offset before a check has compared the new content with the tail (found by a crash test,
    // seed 1408953139).
    writeFileSync(path, text([2, 3, 4, 5, 6]));
    assert.equal((await readAll(f)).lines.length, 0);
    assert.deepEqual(f.offset, before, 'the offset and its tail are kept');
    writeFileSync(path, text([2, 3, 4]));
    assert.deepEqual(await f.check('beginning'), { status: 'ready', rewrite: 'truncated' });
    assert.deepEqual(caseIds(await readAll(f)), ['00004']);
    await f.release();
  });
});
