/**
 * Receiver `jsonl`: reference events, one JSON object per line, from files (followed as they
 * grow, restarted when truncated) or from stdin. Lines are appended in batches; a batch the store
 * refuses is retried, so the files themselves are the buffer and nothing read is dropped. A
 * malformed or overlong line is skipped with a warning naming FILE:LINE and counted.
 */
import { open, readdir, stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { ComponentMetric, IngestConsumer, ReceiverFactory, ReceiverSettings, Signal } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { errorMessage } from '../../errors.ts';
import type { AgentEvent } from '../../model/event.ts';
import { backoffDelay, sleep } from '../../internal/backoff.ts';
import { MAX_LINE_BYTES, parseReferenceLine } from './parse.ts';

const schema = s.object({
  /** Files to read; `*` and `?` are allowed in the file name. Absent: read stdin. */
  include: s.array(s.string({ minLength: 1 })).optional(),
  /** `beginning` reads files from their start, `end` only what is written after vigil starts. */
  start_at: s.enumOf(['beginning', 'end'] as const).default('beginning'),
  poll_interval: s.duration({ min: 10 }).default(1000),
  /** Events appended per batch. */
  batch_size: s.int({ min: 1, max: 10_000 }).default(256),
});
export type JsonlReceiverConfig = Infer<typeof schema>;

export interface JsonlStats {
  lines: number;
  appended: number;
  duplicates: number;
  malformed: number;
}

export const jsonlReceiverFactory: ReceiverFactory<JsonlReceiverConfig> = {
  type: 'jsonl',
  schema,
  signals: ['logs', 'traces'],
  create(settings, cfg) {
    return new JsonlReceiver(settings, cfg);
  },
};

class JsonlReceiver {
  private readonly abort = new AbortController();
  private readonly tasks: Promise<void>[] = [];
  private readonly counters: JsonlStats = { lines: 0, appended: 0, duplicates: 0, malformed: 0 };
  /** Appended and duplicate records per signal (each signal's pipelines get every line). */
  private readonly bySignal = new Map<Signal, { appended: number; duplicates: number }>();
  private readonly consumers: Array<[Signal, IngestConsumer]>;

  constructor(
    private readonly settings: ReceiverSettings,
    private readonly cfg: JsonlReceiverConfig,
  ) {
    this.consumers = Object.entries(settings.consumers).filter((e): e is [Signal, IngestConsumer] => !!e[1]);
    for (const [signal] of this.consumers) this.bySignal.set(signal, { appended: 0, duplicates: 0 });
  }

  stats(): JsonlStats {
    return { ...this.counters };
  }

  metrics(): ComponentMetric[] {
    const counter = (name: string, help: string, labels: Record<string, string>, value: number): ComponentMetric => ({ name, type: 'counter', help, labels, value });
    return [
      counter('vigil_receiver_lines_total', 'JSONL lines read (files or stdin), blank lines aside.', {}, this.counters.lines),
      counter('vigil_receiver_malformed_lines_total', 'JSONL lines skipped as malformed or overlong, each logged with its FILE:LINE.', {}, this.counters.malformed),
      ...[...this.bySignal].flatMap(([signal, c]) => [
        counter('vigil_receiver_appended_records_total', 'Records durably appended to the ingest log.', { signal, protocol: 'jsonl' }, c.appended),
        counter(
          'vigil_receiver_duplicate_records_total',
          'Records the ingest log already held (redeliveries), counted once.',
          { signal, protocol: 'jsonl' },
          c.duplicates,
        ),
      ]),
    ];
  }

  async start(): Promise<void> {
    if (!this.cfg.include) {
      this.tasks.push(this.readStdin());
      return;
    }
    const files = new Set<string>();
    for (const pattern of this.cfg.include) for (const f of await expand(pattern)) files.add(f);
    if (files.size === 0) this.settings.logger.warn('no file matches include yet; waiting for them to appear', { receiver: this.settings.id });
    for (const pattern of this.cfg.include) this.tasks.push(this.watchPattern(pattern));
  }

  async shutdown(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled(this.tasks);
  }

  /** Appends a batch to every consumer, retrying transient refusals until it is taken or we stop. */
  private async deliver(events: AgentEvent[]): Promise<void> {
    if (events.length === 0) return;
    for (let attempt = 1; ; attempt++) {
      try {
        for (const [signal, consume] of this.consumers) {
          const r = await consume(events);
          this.counters.appended += r.appended;
          this.counters.duplicates += r.duplicates;
          const c = this.bySignal.get(signal)!;
          c.appended += r.appended;
          c.duplicates += r.duplicates;
        }
        return;
      } catch (err) {
        if (this.abort.signal.aborted) throw err;
        this.settings.logger.warn('append refused; retrying the batch', { receiver: this.settings.id, attempt, error: errorMessage(err) });
        await sleep(backoffDelay({ initial: 100, max: 5000 }, attempt), this.abort.signal);
      }
    }
  }

  private handleLine(line: string, source: string, lineNo: number, batch: AgentEvent[]): void {
    if (line.trim() === '') return;
    this.counters.lines++;
    if (Buffer.byteLength(line) > MAX_LINE_BYTES) {
      this.malformed(source, lineNo, `line longer than ${MAX_LINE_BYTES} bytes`);
      return;
    }
    const r = parseReferenceLine(line, { source, lineNo }, Date.now);
    if (r.ok) batch.push(r.event);
    else this.malformed(source, lineNo, r.error);
  }

  private malformed(source: string, lineNo: number, error: string): void {
    this.counters.malformed++;
    this.settings.logger.warn(`${source}:${lineNo}: skipped: ${error}`, { receiver: this.settings.id, malformed_total: this.counters.malformed });
  }

  private async readStdin(): Promise<void> {
    const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
    let batch: AgentEvent[] = [];
    let lineNo = 0;
    for await (const line of rl) {
      this.handleLine(line, '<stdin>', ++lineNo, batch);
      if (batch.length >= this.cfg.batch_size) {
        rl.pause();
        await this.deliver(batch);
        batch = [];
        rl.resume();
      }
      if (this.abort.signal.aborted) break;
    }
    await this.deliver(batch);
  }

  private async watchPattern(pattern: string): Promise<void> {
    const followed = new Map<string, Promise<void>>();
    while (!this.abort.signal.aborted) {
      for (const file of await expand(pattern)) {
        if (!followed.has(file)) followed.set(file, this.follow(file));
      }
      await sleep(this.cfg.poll_interval, this.abort.signal);
    }
    await Promise.allSettled(followed.values());
  }

  /** Follows one file from its start (or end), reading new complete lines as they are written. */
  private async follow(file: string): Promise<void> {
    let offset = 0;
    let lineNo = 0;
    if (this.cfg.start_at === 'end') offset = (await stat(file).catch(() => ({ size: 0 }))).size;
    let carry = Buffer.alloc(0);
    let skipping = false;
    const chunk = Buffer.alloc(64 * 1024);
    while (!this.abort.signal.aborted) {
      let size: number;
      try {
        size = (await stat(file)).size;
      } catch {
        await sleep(this.cfg.poll_interval, this.abort.signal);
        continue;
      }
      if (size < offset) {
        // Truncated or replaced: start over; ids of lines seen before make repeats harmless.
        offset = 0;
        lineNo = 0;
        carry = Buffer.alloc(0);
      }
      if (size === offset) {
        await sleep(this.cfg.poll_interval, this.abort.signal);
        continue;
      }
      const fh = await open(file, 'r');
      try {
        let batch: AgentEvent[] = [];
        while (offset < size) {
          const { bytesRead } = await fh.read(chunk, 0, chunk.length, offset);
          if (bytesRead === 0) break;
          offset += bytesRead;
          let data = Buffer.concat([carry, chunk.subarray(0, bytesRead)]);
          let nl: number;
          while ((nl = data.indexOf(0x0a)) !== -1) {
            if (skipping) skipping = false;
            else this.handleLine(data.subarray(0, nl).toString('utf8'), file, ++lineNo, batch);
            data = data.subarray(nl + 1);
            if (batch.length >= this.cfg.batch_size) {
              await this.deliver(batch);
              batch = [];
            }
          }
          if (data.length > MAX_LINE_BYTES || skipping) {
            // An overlong line is never buffered whole: report it once, drop bytes to its newline.
            if (!skipping) this.malformed(file, ++lineNo, `line longer than ${MAX_LINE_BYTES} bytes`);
            skipping = true;
            data = Buffer.alloc(0);
          }
          carry = Buffer.from(data);
        }
        await this.deliver(batch);
      } finally {
        await fh.close();
      }
    }
  }
}

/** Expands `*` and `?` in the file-name part of a path. */
async function expand(pattern: string): Promise<string[]> {
  const abs = resolve(pattern);
  const name = basename(abs);
  if (!/[*?]/.test(name)) return [abs];
  const re = new RegExp(
    '^' +
      name
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.') +
      '$',
  );
  const dir = dirname(abs);
  const entries = await readdir(dir).catch(() => [] as string[]);
  return entries
    .filter((e) => re.test(e))
    .sort()
    .map((e) => resolve(dir, e));
}
