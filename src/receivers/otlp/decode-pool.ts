/**
 * Reading of large OTLP/JSON request bodies on worker threads (the receiver's `decode_threads`;
 * one by default where the machine has a second CPU, config.ts): decoding, and the mapping of the
 * records to events (mapping.ts). Decoding is about a quarter of the event loop's work per request
 * on the SQLite default (bench:ingest profile, README Performance, rounds 12 and 40). The decoders
 * and the mapping are pure (bytes and options in, events out), so a worker thread runs them as
 * they are and answers with the events: for a receiver that does not forward (every receiver but
 * a forwarding one) those are only the failures and the coalesced activity markers, a small
 * fraction of the body. Mapping on the thread too (round 41): the thread's answer for 512 agent
 * spans is 64 events (44 KB as cloned) instead of 16 spans and 400 marks (172 KB), which took the
 * event loop about 0.8 ms to receive, and their mapping another 0.3 ms. Measured on 2 cores:
 * OTLP/JSON throughput up by a fifth (round 12), and JSON's ack p99 under 20 ms at the goal's half
 * rate in every run of round 40 (the loop that answers no longer waits behind a body's decode).
 *
 * The event loop still decodes:
 * - OTLP/protobuf bodies, over HTTP and gRPC, whose signal no pipeline wants activity markers of
 *   (POOLED_WITH_MARKERS: without marks to map, their decode costs about what the trip does);
 * - bodies under MIN_POOLED_BYTES (a round trip to a thread costs more than they take);
 * - every body when the receiver forwards records downstream (all records are built, and copying
 *   them back costs about what decoding them does);
 * - a body while every thread has MAX_PENDING_PER_THREAD bodies waiting (bounded queues);
 * - the bodies a thread held when it failed (it is restarted on next use; after MAX_FAILURES
 *   failures the pool stops using threads).
 * A body decoded on a thread gives exactly what the event loop would (the same functions; an error
 * comes back with its code, message and transient flag), so the receiver answers the same either way.
 */
import type { Worker } from 'node:worker_threads';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Signal } from '../../component.ts';
import { VigilError, errorMessage } from '../../errors.ts';
import type { VigilErrorCode } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { evalWorker } from '../../internal/source-worker.ts';
import { decodeLogsJson, decodeTracesJson } from './json.ts';
import { mapLogs, mapTraces, type MapResult } from './mapping.ts';
import { decodeLogsProtobuf, decodeTracesProtobuf } from './protobuf.ts';
import type { DecodeOptions, DecodeStats, DecodedLogs, DecodedTraces, NormalizedLogs, NormalizedTraces } from './normalized.ts';

export type BodyEncoding = 'json' | 'protobuf';
export type Decoded = DecodedTraces | DecodedLogs;

/** Bodies smaller than this are decoded on the event loop: the thread's round trip (two copies, two messages) would cost more. */
export const MIN_POOLED_BYTES = 16 * 1024;
/** The encodings whose bodies always go to a thread: OTLP/JSON (3–4 ms to decode 512 spans). */
export const POOLED_ENCODINGS: readonly BodyEncoding[] = ['json'];
/**
 * The encodings whose bodies go to a thread when the receiver maps activity markers of their
 * signal (a pipeline with a stateful processor: the watchdog, as in the default pipeline): OTLP/
 * protobuf. Its body decodes about twice as fast per span as JSON's (1.0–2.1 ms for 512 spans).
 * Without markers the thread saves the event loop little (the decode alone, 0.5 ms, against the
 * trip: the body's copy, the answer's clone, the thread's turn on a shared core): the memory
 * store's protobuf full rate on 2 cores was 0.98× a bare protobufjs server without it, 0.82× with
 * it (round 41; 0.77–0.80× in round 40). With markers the loop also saves mapping and coalescing
 * 400 marks, and it has a pipeline to run: on the SQLite default the full rate rose 202 → 277
 * requests/s and the ack p99 at the half rate was 10.9 ms (README, Performance, round 41).
 */
export const POOLED_WITH_MARKERS: readonly BodyEncoding[] = ['protobuf'];
/** Bodies waiting per thread; beyond it the event loop decodes (a queue nobody bounds is a queue that grows). */
export const MAX_PENDING_PER_THREAD = 16;
/** Thread failures after which the pool decodes everything on the event loop. */
export const MAX_FAILURES = 3;

const DECODERS: Record<BodyEncoding, Record<Signal, (body: Buffer, options: DecodeOptions) => Decoded>> = {
  json: { traces: decodeTracesJson, logs: decodeLogsJson },
  protobuf: { traces: decodeTracesProtobuf, logs: decodeLogsProtobuf },
};

/** Decodes a body with the receiver's decoders, on the thread that calls it (the event loop, or a decode thread). */
export function decodeBody(encoding: BodyEncoding, signal: Signal, body: Buffer, options: DecodeOptions): Decoded {
  return DECODERS[encoding][signal](body, options);
}

/** How a receiver decodes and maps a body: the choices its decoder and its mapping make alike. */
export interface BodyOptions {
  /** The signal is forwarded downstream: every record is built and kept (mapping.ts `forward`); else only the relevant ones. */
  forward: boolean;
  /** A pipeline of the signal wants activity markers (mapping.ts `markers`). */
  markers: boolean;
  /** The clock for records without any time (the mapping's `now`); on a thread, the time the body was sent there. */
  now?: () => number;
}

/** A body decoded and mapped: what its decoder counted, and its records mapped to events (what ingest.ts appends). */
export interface MappedBody {
  stats: DecodeStats;
  /** Records checked but not built (not forwarded): accepted, and certainly not relevant. */
  skipped: number;
  /** Trace id → session named by the records skipped. */
  sessions: Map<string, string>;
  mapped: MapResult;
}

/** Decodes and maps a body, on the thread that calls it (the event loop, or a decode thread). */
export function decodeAndMap(encoding: BodyEncoding, signal: Signal, body: Buffer, options: BodyOptions): MappedBody {
  const decoded = decodeBody(encoding, signal, body, { skipIrrelevant: !options.forward, markers: options.markers });
  // The mapping's options are these choices as they are (mapping.ts MapOptions).
  const mapped = signal === 'traces' ? mapTraces(decoded.groups as NormalizedTraces[], options) : mapLogs(decoded.groups as NormalizedLogs[], options);
  return { stats: decoded.stats, skipped: decoded.skipped, sessions: decoded.sessions, mapped };
}

/** How a transport decodes and maps a body: through its pool when the receiver has decode threads, else on the event loop. */
export function decodeAndMapWith(
  decoder: DecodePool | undefined,
  encoding: BodyEncoding,
  signal: Signal,
  body: Buffer,
  options: BodyOptions,
): MappedBody | Promise<MappedBody> {
  return decoder ? decoder.decodeAndMap(encoding, signal, body, options) : decodeAndMap(encoding, signal, body, options);
}

/** A body sent to a thread (the thread's copy of it: the receiver keeps its own for a fallback), and its clock's reading. */
export interface DecodeRequest {
  id: number;
  encoding: BodyEncoding;
  signal: Signal;
  body: Uint8Array;
  options: Omit<BodyOptions, 'now'> & { nowMs: number };
}

/** A thread's answer: the body decoded and mapped, or the decoder's error. */
export type DecodeAnswer = { id: number; body: MappedBody } | { id: number; error: { code?: VigilErrorCode; message: string; transient?: boolean; stack?: string } };

export interface DecodePoolStats {
  /** Bodies decoded on a thread. */
  onThreads: number;
  /** Bodies decoded on the event loop (small, forwarded, protobuf without markers, queues full, or a thread failed). */
  onLoop: number;
  /** Threads that stopped or failed while in use. */
  failures: number;
}

export interface DecodePoolOptions {
  /** Smallest body sent to a thread (MIN_POOLED_BYTES otherwise; the tests send small fixtures). */
  minPooledBytes?: number;
  /** Encodings whose bodies go to a thread (POOLED_ENCODINGS otherwise; the tests check every decoder on a thread). */
  encodings?: readonly BodyEncoding[];
  /** Encodings whose bodies go to a thread when markers are mapped (POOLED_WITH_MARKERS otherwise). */
  encodingsWithMarkers?: readonly BodyEncoding[];
  /** The worker's module (this module's sibling decode-worker otherwise). */
  workerUrl?: string;
}

interface Job {
  encoding: BodyEncoding;
  signal: Signal;
  body: Buffer;
  options: BodyOptions;
  resolve: (d: MappedBody) => void;
  reject: (err: unknown) => void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Job>;
}

const OWN_EXTENSION = extname(fileURLToPath(import.meta.url));
/** The worker's entry point: this module's sibling, in the same form (TypeScript from the sources, JavaScript when built). */
const WORKER_URL = new URL(`./decode-worker${OWN_EXTENSION}`, import.meta.url).href;
/** From the sources, the worker registers the TypeScript loader first (src/internal/ts-worker-loader.mjs, not in dist/). */
const LOADER_URL = OWN_EXTENSION === '.ts' ? new URL('../../internal/ts-worker-loader.mjs', import.meta.url).href : undefined;
const BOOTSTRAP = `const { workerData } = require('node:worker_threads');
(async () => {
  if (workerData.loader) await import(workerData.loader);
  await import(workerData.url);
})();`;

export class DecodePool {
  private readonly threads: Array<Thread | undefined>;
  private nextId = 0;
  private closed = false;
  private readonly counts: DecodePoolStats = { onThreads: 0, onLoop: 0, failures: 0 };

  private readonly minBytes: number;
  private readonly encodings: readonly BodyEncoding[];
  private readonly encodingsWithMarkers: readonly BodyEncoding[];
  private readonly workerUrl: string;

  /** `threads` worker threads at most (0: decode everything on the event loop), started on first use. */
  constructor(
    threads: number,
    private readonly logger: Logger,
    opts: DecodePoolOptions = {},
  ) {
    this.threads = new Array<Thread | undefined>(threads).fill(undefined);
    this.minBytes = opts.minPooledBytes ?? MIN_POOLED_BYTES;
    this.encodings = opts.encodings ?? POOLED_ENCODINGS;
    this.encodingsWithMarkers = opts.encodingsWithMarkers ?? POOLED_WITH_MARKERS;
    this.workerUrl = opts.workerUrl ?? WORKER_URL;
  }

  /** The body decoded and mapped (decodeAndMap); rejects as the decoder would throw (VIGIL_PAYLOAD_INVALID for a body it cannot read). */
  decodeAndMap(encoding: BodyEncoding, signal: Signal, body: Buffer, options: BodyOptions): Promise<MappedBody> {
    const slot = this.slotFor(encoding, body, options);
    if (slot < 0) return this.onLoop({ encoding, signal, body, options });
    const thread = (this.threads[slot] ??= this.start(slot));
    const id = ++this.nextId;
    // The thread gets a copy (moved, not copied again); the body stays here in case it fails.
    const copy = new Uint8Array(body);
    return new Promise<MappedBody>((resolve, reject) => {
      thread.pending.set(id, { encoding, signal, body, options, resolve, reject });
      thread.worker.ref();
      // A record without any time takes the time the body was sent (a function cannot be sent).
      const nowMs = (options.now ?? Date.now)();
      const request: DecodeRequest = { id, encoding, signal, body: copy, options: { forward: options.forward, markers: options.markers, nowMs } };
      thread.worker.postMessage(request, [copy.buffer]);
    });
  }

  stats(): DecodePoolStats {
    return { ...this.counts };
  }

  /** Stops the threads; bodies they still held are decoded on the event loop. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.flatMap((t) => (t ? [t.worker.terminate()] : [])));
  }

  /** The thread with the fewest bodies waiting, or -1 when the event loop decodes this one. */
  private slotFor(encoding: BodyEncoding, body: Buffer, options: BodyOptions): number {
    if (this.closed || this.threads.length === 0 || this.counts.failures >= MAX_FAILURES) return -1;
    if (body.length < this.minBytes || options.forward) return -1;
    if (!this.encodings.includes(encoding) && !(options.markers && this.encodingsWithMarkers.includes(encoding))) return -1;
    let best = -1;
    let bestPending = MAX_PENDING_PER_THREAD;
    for (let i = 0; i < this.threads.length; i++) {
      const pending = this.threads[i]?.pending.size ?? 0;
      if (pending < bestPending) {
        best = i;
        bestPending = pending;
      }
    }
    return best;
  }

  private onLoop(job: Pick<Job, 'encoding' | 'signal' | 'body' | 'options'>): Promise<MappedBody> {
    this.counts.onLoop++;
    try {
      return Promise.resolve(decodeAndMap(job.encoding, job.signal, job.body, job.options));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  private start(slot: number): Thread {
    // The thread loads what it needs itself (LOADER_URL from the sources), none of the process's preloads.
    // Idle threads must not keep the process alive (evalWorker unrefs it); a thread with bodies
    // waiting does (ref'd by decodeAndMap).
    const pending = new Map<number, Job>();
    const worker = evalWorker(BOOTSTRAP, { url: this.workerUrl, loader: LOADER_URL }, (answer: DecodeAnswer) => {
      const job = pending.get(answer.id);
      if (!job) return;
      pending.delete(answer.id);
      if (pending.size === 0) worker.unref();
      this.counts.onThreads++;
      if ('body' in answer) job.resolve(answer.body);
      else job.reject(errorOf(answer.error));
    });
    const thread: Thread = { worker, pending };
    const failed = (reason: string) => {
      if (this.threads[slot] !== thread) return;
      this.threads[slot] = undefined;
      if (!this.closed) {
        this.counts.failures++;
        const last = this.counts.failures >= MAX_FAILURES;
        this.logger[last ? 'error' : 'warn'](
          last ? 'OTLP decode thread failed; bodies are decoded on the event loop from now on' : 'OTLP decode thread failed; it is restarted on next use',
          { reason, pending: thread.pending.size },
        );
      }
      // Nothing a thread held is lost: the event loop decodes it.
      for (const job of thread.pending.values()) this.onLoop(job).then(job.resolve, job.reject);
      thread.pending.clear();
    };
    worker.on('error', (err) => failed(errorMessage(err)));
    worker.on('exit', (code) => failed(`exit code ${code}`));
    return thread;
  }
}

/** The decoder's error as the event loop would have thrown it. */
function errorOf(e: { code?: VigilErrorCode; message: string; transient?: boolean; stack?: string }): Error {
  if (e.code) return new VigilError(e.code, e.message, { transient: e.transient });
  const err = new Error(e.message);
  if (e.stack) err.stack = e.stack;
  return err;
}
