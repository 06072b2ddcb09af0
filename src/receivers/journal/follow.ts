/**
 * Following one journal file with a durable offset, as the writer appends to it and its consumer
 * compacts it (DESIGN 3.5). The offset always sits right after a complete line; a partial last
 * line waits for its newline. Alongside the offset the state keeps the file's identity (device and
 * inode) and a fingerprint of the last line before the offset (`tail`: the SHA-256 of the bytes
 * from the start of the last non-blank line to the offset — a case's line holds its unique case
 * id), which together tell what happened to the file since the offset was taken:
 *
 * - same identity, larger or equal size, same tail: appended to — read on from the offset;
 * - same identity, shorter than the offset, or another tail: rewritten in place (truncated and
 *   written again);
 * - another identity at the path: replaced (an atomic rewrite-and-rename by the consumer, a
 *   rotation, a delete and re-create). Before switching, the old file is read to its end through
 *   the handle still open on it, so nothing written to it just before the rename is lost.
 *
 * After a rewrite or a replacement the new content is searched for the tail: a compaction that
 * kept the unconsumed tail of the journal keeps the lines just before the offset, so reading
 * resumes right after them — nothing read twice, nothing skipped. When the tail is not there (the
 * consumer kept nothing vigil had read; a rotation; a new file), reading starts at the top, and
 * the case ids (event ids) drop anything read before. vigil only reads: it never writes a journal.
 */
import { createHash } from 'node:crypto';
import { open, stat, type FileHandle } from 'node:fs/promises';

/** Bytes read per read call. */
const CHUNK_BYTES = 64 * 1024;
/**
 * The longest tail window: lines that identify nothing (malformed ones) after the last case are
 * covered up to this many bytes; past it the window falls back to the last non-blank line.
 */
export const MAX_TAIL_BYTES = 1024 * 1024;
/** How far a rewritten file is searched for the tail before reading it from the top. */
export const RESYNC_SCAN_BYTES = 256 * 1024 * 1024;

/** The durable state of one followed file (the receiver's state entry, keyed by path). */
export interface FileOffset {
  v: 1;
  dev: number;
  ino: number;
  /** Bytes consumed: always after a complete line, unless inside an overlong line (`skip`). */
  offset: number;
  /**
   * SHA-256 (first 32 hex digits) of the `tailLen` bytes before the offset: from the start of the
   * last line that identifies itself (a case, with its unique case id; else the last non-blank
   * line) to the offset, so malformed or repeated lines after it are covered too. '' (and 0) when
   * there is none to fingerprint (the offset is 0, or just after a skipped overlong line).
   */
  tail: string;
  tailLen: number;
  /** The offset is inside an overlong line being skipped: drop bytes up to its newline. */
  skip?: boolean;
}

export type RewriteKind = 'truncated' | 'rewritten' | 'replaced';

export interface ReadLine {
  /** The line's bytes, without its newline. */
  bytes: Buffer;
  /** File offset of its first byte. */
  offset: number;
}

export interface ReadResult {
  lines: ReadLine[];
  /** Overlong lines found (their start offsets): skipped, never buffered whole. */
  overlong: number[];
  /** The offset after what was read (after the last complete line, or inside an overlong one). */
  next: FileOffset;
  /** Bytes still unread after `next` (a partial line, or more lines than the batch took). */
  remaining: number;
}

export function tailHash(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 32);
}

/**
 * One file at one path. Holds an open handle on the file its offset belongs to, so a rename or a
 * deletion does not lose the last lines written to it.
 */
export class FollowedFile {
  private fh: FileHandle | undefined;
  private held: { dev: number; ino: number } | undefined;
  /** Size and mtime when last checked: the tail is verified again only when they change. */
  private seen: { size: number; mtimeMs: number } | undefined;
  /** The file was found empty below the offset: nothing is read until a check has seen its content. */
  private awaitingContent = false;

  constructor(
    readonly path: string,
    /** The committed offset; undefined before the file was first opened. */
    public offset: FileOffset | undefined,
  ) {}

  /** Bytes not read yet, as of the last check. */
  lag = 0;

  /**
   * Brings the offset in line with the file at the path. `ready`: the held file is the one at the
   * path, positioned (after a resynchronization when `rewrite` says so). `moved`: the held file is
   * no longer at the path (renamed away, replaced, deleted) — read it to its end, then `release()`
   * and check again. `absent`: no file at the path and none held (the offset is kept for when one
   * appears). `initial` positions a file never seen before: at the top, or after its last line.
   */
  async check(initial: 'beginning' | 'end'): Promise<{ status: 'ready' | 'moved' | 'absent'; rewrite?: RewriteKind }> {
    this.awaitingContent = false;
    if (this.fh) {
      const now = await stat(this.path).catch(() => undefined);
      if (!now || now.dev !== this.held!.dev || now.ino !== this.held!.ino) return { status: 'moved' };
      if (this.offset && (this.offset.dev !== this.held!.dev || this.offset.ino !== this.held!.ino)) {
        // The offset went back to one committed for another file (a batch was refused after a switch).
        await this.resync();
        return { status: 'ready', rewrite: 'replaced' };
      }
    } else {
      try {
        this.fh = await open(this.path, 'r');
      } catch {
        return { status: 'absent' };
      }
      const id = await this.fh.stat();
      this.held = { dev: id.dev, ino: id.ino };
      this.seen = undefined;
      if (!this.offset) {
        this.offset = initial === 'end' ? await this.endOffset(id.size) : { v: 1, dev: id.dev, ino: id.ino, offset: 0, tail: '', tailLen: 0 };
      } else if (this.offset.dev !== id.dev || this.offset.ino !== id.ino) {
        await this.resync();
        return { status: 'ready', rewrite: 'replaced' };
      }
    }
    const st = await this.fh.stat();
    const changed = !this.seen || this.seen.size !== st.size || this.seen.mtimeMs !== st.mtimeMs;
    this.seen = { size: st.size, mtimeMs: st.mtimeMs };
    const o = this.offset!;
    if (st.size < o.offset) {
      // An empty file is most likely a rewrite in place caught between its truncation and its
      // write: wait for its content, then look for the tail in it — resynchronising now would
      // find nothing and read the kept lines again. (Emptied for good, it is resynchronised once
      // anything is written to it.)
      if (st.size === 0) {
        this.lag = 0;
        // Nothing may be read until the content is checked against the tail: the write may land
        // between this check and the read. The next check looks at the file again.
        this.awaitingContent = true;
        this.seen = undefined;
        return { status: 'ready' };
      }
      await this.resync();
      return { status: 'ready', rewrite: 'truncated' };
    }
    if (changed && o.tailLen > 0 && !o.skip && (await this.tailAt(o.offset, o.tailLen)) !== o.tail) {
      await this.resync();
      return { status: 'ready', rewrite: 'rewritten' };
    }
    this.lag = st.size - o.offset;
    return { status: 'ready' };
  }

  /** Closes the handle on a file that is no longer at the path (after its last lines were read). */
  async release(): Promise<void> {
    const fh = this.fh;
    this.fh = undefined;
    this.held = undefined;
    this.seen = undefined;
    await fh?.close();
  }

  /**
   * Reads complete lines after the offset, at most `maxLines` of them, through the held handle
   * (the file the offset belongs to, even if the path now names another). Lines longer than
   * `maxLineBytes` are reported in `overlong` and skipped without being held in memory.
   * `identifies` tells a line that is unique in the journal (a valid case, which holds its case id)
   * from one that may repeat (a malformed line, a duplicate); the tail window starts at the last
   * unique one, because a window of a repeated line could be found again *after* unread lines in a
   * compacted file, and reading would resume past them.
   */
  async read(maxLines: number, maxLineBytes: number, identifies?: (bytes: Buffer) => boolean): Promise<ReadResult> {
    const fh = this.fh!;
    const o = this.offset!;
    if (this.awaitingContent) return { lines: [], overlong: [], next: o, remaining: 0 };
    const size = (await fh.stat()).size;
    const lines: ReadLine[] = [];
    const overlong: number[] = [];
    let skip = o.skip === true;
    let consumed = o.offset;
    let pending = Buffer.alloc(0);
    let pendingAt = o.offset;
    let readPos = o.offset;
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    // With no stored tail to look back at (see below), the start of what the first chunk read
    // stands in for it when more chunks follow: a rewrite in place between two chunks shows there.
    const lookBack = o.tailLen > 0 && !o.skip;
    let first: Buffer | undefined;
    let chunks = 0;
    outer: while (readPos < size) {
      const { bytesRead } = await fh.read(chunk, 0, Math.min(CHUNK_BYTES, size - readPos), readPos);
      if (bytesRead === 0) break;
      if (chunks++ === 0 && !lookBack) first = Buffer.from(chunk.subarray(0, Math.min(bytesRead, FIRST_BYTES)));
      readPos += bytesRead;
      const data = pending.length ? Buffer.concat([pending, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
      let start = 0;
      for (;;) {
        const nl = data.indexOf(0x0a, start);
        if (nl < 0) break;
        if (skip) skip = false;
        else if (nl - start > maxLineBytes) overlong.push(pendingAt + start);
        else lines.push({ bytes: Buffer.from(data.subarray(start, nl)), offset: pendingAt + start });
        start = nl + 1;
        consumed = pendingAt + start;
        if (lines.length >= maxLines) break outer;
      }
      pending = Buffer.from(data.subarray(start));
      pendingAt += start;
      if (skip || pending.length > maxLineBytes) {
        // An overlong line: reported once at its start, its bytes dropped up to its newline.
        if (!skip) overlong.push(pendingAt);
        skip = true;
        pendingAt += pending.length;
        consumed = pendingAt;
        pending = Buffer.alloc(0);
      }
    }
    // A rewrite in place between the check and these reads (the file truncated and the kept lines
    // written at its top) was read at the old offset: lines of a shifted file, misaligned, and an
    // offset past kept lines never read, with a tail taken from the new content that every later
    // check would find in place. The window before the offset still hashing to the stored tail,
    // read after the lines, shows they came from the file the offset belongs to; otherwise nothing
    // is taken and the next check, forced, finds the rewrite and resynchronizes. This is the read's
    // last look at the file: the new tail is hashed from the bytes in hand (see below).
    let before: Buffer | undefined;
    if (consumed > o.offset && lookBack) {
      before = await this.bytesAt(o.offset, o.tailLen);
      if (tailHash(before) !== o.tail) {
        this.seen = undefined;
        return { lines: [], overlong: [], next: o, remaining: Math.max(0, size - o.offset) };
      }
    } else if (consumed > o.offset && first && chunks > 1 && !(await this.bytesAt(o.offset + first.length, first.length)).equals(first)) {
      // Lines of two contents (the second chunk read at old offsets in the rewritten file): none is taken.
      this.seen = undefined;
      return { lines: [], overlong: [], next: o, remaining: Math.max(0, size - o.offset) };
    }
    // The tail window starts at the last line that identifies itself, or where the previous window
    // started when no such line was read (lines after it extend it), within MAX_TAIL_BYTES; else at
    // the last non-blank line read (or where the previous one started, when only blank lines
    // followed it). An overlong line after its start leaves nothing to fingerprint.
    let windowStart: number | undefined;
    const clear = (at: number) => !overlong.some((x) => x > at) && consumed - at <= MAX_TAIL_BYTES;
    const lastLine = findLast(lines, (l) => !isBlank(l.bytes));
    const anchor = identifies ? findLast(lines, (l) => !isBlank(l.bytes) && identifies(l.bytes)) : lastLine;
    const previous = o.tailLen > 0 && !o.skip ? o.offset - o.tailLen : undefined;
    if (anchor && clear(anchor.offset)) windowStart = anchor.offset;
    else if (!anchor && identifies && previous !== undefined && clear(previous)) windowStart = previous;
    else if (lastLine && clear(lastLine.offset)) windowStart = lastLine.offset;
    else if (!lastLine && previous !== undefined && clear(previous)) windowStart = previous;
    if (skip) windowStart = undefined;
    const tailLen = windowStart === undefined ? 0 : consumed - windowStart;
    const next: FileOffset = {
      v: 1,
      dev: this.held!.dev,
      ino: this.held!.ino,
      offset: consumed,
      tail: consumed === o.offset && tailLen === o.tailLen ? o.tail : tailLen === 0 ? '' : await this.windowHash(windowStart!, consumed, lines, o, before),
      tailLen,
      ...(skip ? { skip: true } : {}),
    };
    return { lines, overlong, next, remaining: Math.max(0, size - consumed) };
  }

  /** Whether the held file is still the one at the path (false once renamed away or deleted). */
  get holding(): boolean {
    return this.fh !== undefined;
  }

  /** The fingerprint of the `len` bytes before `end` in the held file. */
  private async tailAt(end: number, len: number): Promise<string> {
    return tailHash(await this.bytesAt(end, len));
  }

  /** The `len` bytes before `end` in the held file (fewer when the file is shorter now). */
  private async bytesAt(end: number, len: number): Promise<Buffer> {
    const buf = Buffer.alloc(len);
    const { bytesRead } = await this.fh!.read(buf, 0, len, end - len);
    return buf.subarray(0, bytesRead);
  }

  /**
   * The fingerprint of a read's new tail window [`start`, `end`), hashed from the bytes the read
   * took — the lines from `start` on, and the stored window before the offset (`before`, checked
   * against the stored tail) when the window begins there — not read from the file again: a
   * rewrite in place after the read's check of the stored tail would give a fingerprint of the new
   * content at the old offset, which every later check finds in place, and reading would go on
   * there, misaligned, past kept lines never read (journal-crash lost cases so, CI seed 67203842).
   */
  private async windowHash(start: number, end: number, lines: readonly ReadLine[], o: FileOffset, before: Buffer | undefined): Promise<string> {
    const h = createHash('sha256');
    let len = 0;
    if (start < o.offset && before && start === o.offset - before.length) {
      h.update(before);
      len += before.length;
    }
    for (const l of lines) {
      if (l.offset < start) continue;
      h.update(l.bytes);
      h.update(NEWLINE);
      len += l.bytes.length + 1;
    }
    // The lines from `start` are contiguous up to `end` (no overlong line after a window's start);
    // anything else would be a bug here: fall back to the file.
    if (len !== end - start) return this.tailAt(end, end - start);
    return h.digest('hex').slice(0, 32);
  }

  /** `start_at: end`: after the last complete line (a partial one is read once it is finished), its tail that line. */
  private async endOffset(size: number): Promise<FileOffset> {
    const { dev, ino } = this.held!;
    // Read backwards until the last newline and the start of the last non-blank line before it are in hand.
    let from = size;
    let buf = Buffer.alloc(0);
    let end = -1;
    while (from > 0 && buf.length <= MAX_TAIL_SCAN_BYTES) {
      const start = Math.max(0, from - CHUNK_BYTES);
      const chunk = Buffer.alloc(from - start);
      const { bytesRead } = await this.fh!.read(chunk, 0, chunk.length, start);
      buf = Buffer.concat([chunk.subarray(0, bytesRead), buf]);
      from = start;
      if (end < 0) {
        const nl = buf.lastIndexOf(0x0a);
        if (nl >= 0) end = from + nl + 1;
      }
      if (end >= 0) {
        const lineStart = lastNonBlankLineStart(buf.subarray(0, end - from), from === 0);
        if (lineStart !== undefined) {
          const at = from + lineStart;
          return { v: 1, dev, ino, offset: end, tail: await this.tailAt(end, end - at), tailLen: end - at };
        }
      }
    }
    return { v: 1, dev, ino, offset: Math.max(0, end), tail: '', tailLen: 0 };
  }

  /**
   * The file at the held handle is not what the offset describes: find the offset's tail in it
   * (at a line end) and resume after it, else start at the top. The new offset is not committed
   * yet; it is written with the next batch.
   */
  private async resync(): Promise<void> {
    const { dev, ino } = this.held!;
    const o = this.offset!;
    const found = o.tailLen > 0 && !o.skip ? await this.findTail(o.tail, o.tailLen) : undefined;
    this.offset = found === undefined ? { v: 1, dev, ino, offset: 0, tail: '', tailLen: 0 } : { v: 1, dev, ino, offset: found, tail: o.tail, tailLen: o.tailLen };
    this.seen = undefined;
  }

  /**
   * The first place in the held file where a window like the stored one ends: `len` bytes that
   * start at a line start, end at a line end and hash to `tail`. Only a line end with a line start
   * exactly `len` bytes before it is a candidate (for a one-line window: a line of that length), so
   * the search hashes almost nothing; a candidate's bytes are read back and hashed.
   */
  private async findTail(tail: string, len: number): Promise<number | undefined> {
    const fh = this.fh!;
    const size = Math.min((await fh.stat()).size, RESYNC_SCAN_BYTES);
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    // Line starts in the last `len` bytes, oldest first (`head` is the first still in range).
    const starts: number[] = [0];
    let head = 0;
    let pos = 0;
    while (pos < size) {
      const { bytesRead } = await fh.read(chunk, 0, Math.min(CHUNK_BYTES, size - pos), pos);
      if (bytesRead === 0) break;
      for (let nl = chunk.indexOf(0x0a); nl >= 0 && nl < bytesRead; nl = chunk.indexOf(0x0a, nl + 1)) {
        const end = pos + nl + 1;
        while (head < starts.length && starts[head]! < end - len) head++;
        if (head < starts.length && starts[head] === end - len && (await this.tailAt(end, len)) === tail) return end;
        starts.push(end);
        // Keep the array short: drop what fell out of range once it is most of it.
        if (head > 1024 && head > starts.length / 2) {
          starts.splice(0, head);
          head = 0;
        }
      }
      pos += bytesRead;
    }
    return undefined;
  }
}

const NEWLINE = Buffer.from('\n');

/** Bytes of a read's first chunk compared again after the read when there is no stored tail to compare. */
const FIRST_BYTES = 4096;

/** Bytes of a tail window read back at most when positioning at the end of a file. */
const MAX_TAIL_SCAN_BYTES = 64 * 1024 * 1024;

function isBlank(bytes: Buffer): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return false;
  return true;
}

function findLast<T>(xs: readonly T[], pred: (x: T) => boolean): T | undefined {
  for (let i = xs.length - 1; i >= 0; i--) if (pred(xs[i]!)) return xs[i];
  return undefined;
}

/**
 * The start (in `buf`, which ends with a newline) of its last non-blank line; undefined when none
 * starts inside `buf` for sure (`atFileStart`: `buf` begins at the file's first byte).
 */
function lastNonBlankLineStart(buf: Buffer, atFileStart: boolean): number | undefined {
  let end = buf.length - 1; // the newline ending the last line
  while (end >= 0) {
    const prev = end === 0 ? -1 : buf.lastIndexOf(0x0a, end - 1);
    if (prev < 0 && !atFileStart) return undefined;
    const start = prev + 1;
    if (!isBlank(buf.subarray(start, end))) return start;
    end = prev;
  }
  return undefined;
}
