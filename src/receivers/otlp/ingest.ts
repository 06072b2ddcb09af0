/**
 * The protocol-independent half of an OTLP export: decoded records → AgentEvents → durable append,
 * with the partial-success accounting and the counters. The transports (OTLP/HTTP with JSON or
 * protobuf bodies, OTLP/gRPC) only read requests, decode them and turn the outcome or the refusal
 * into their own answers.
 */
import { Histogram, type HistogramSnapshot } from '../../internal/histogram.ts';
import type { IngestActivity } from '../../internal/ingest-activity.ts';
import type { IngestConsumer, Signal } from '../../component.ts';
import { VigilError, errorMessage } from '../../errors.ts';
import { summarize } from './normalized.ts';
import type { DecodeStats } from './normalized.ts';
import type { Logger } from '../../logger.ts';
import type { BodyOptions, DecodePool, MappedBody } from './decode-pool.ts';
import type { Admission } from './admission.ts';

/** The wire protocols of the receiver, as counted in its stats. */
export type OtlpProtocol = 'http-json' | 'http-protobuf' | 'grpc';
export const OTLP_PROTOCOLS: readonly OtlpProtocol[] = ['http-json', 'http-protobuf', 'grpc'];

/** Counts of one signal (over one protocol, or over all of them). */
export interface OtlpCounts {
  /** Export requests received. */
  requests: number;
  /** Requests refused as a whole (HTTP 4xx/5xx, gRPC non-OK); nothing from them was kept. */
  refused: number;
  /** Records accepted (relevant and not relevant). */
  accepted: number;
  /** Records rejected individually (OTLP partial success). */
  rejected: number;
  /** Accepted records that the chain does not need (successful spans, unremarkable logs): counted, not stored. */
  irrelevant: number;
  /** Events durably appended by the consumer, and those it already had (redeliveries). */
  appended: number;
  duplicates: number;
  /** Values bounded while decoding. */
  droppedAttributes: number;
  truncatedValues: number;
}

/**
 * Counts of one signal: the totals, and the same counts per protocol. The totals also hold HTTP
 * requests refused before their encoding was known (a content type that is neither JSON nor
 * protobuf), which no protocol counts.
 */
export interface OtlpSignalStats extends OtlpCounts {
  protocols: Record<OtlpProtocol, OtlpCounts>;
}

export type OtlpReceiverStats = Record<Signal, OtlpSignalStats>;

function zeroCounts(): OtlpCounts {
  return { requests: 0, refused: 0, accepted: 0, rejected: 0, irrelevant: 0, appended: 0, duplicates: 0, droppedAttributes: 0, truncatedValues: 0 };
}

export function emptyReceiverStats(): OtlpReceiverStats {
  const signal = (): OtlpSignalStats => ({
    ...zeroCounts(),
    protocols: { 'http-json': zeroCounts(), 'http-protobuf': zeroCounts(), grpc: zeroCounts() },
  });
  return { traces: signal(), logs: signal() };
}

/** One signal and protocol's ack durations (seconds). */
export interface AckDurations {
  signal: Signal;
  protocol: OtlpProtocol;
  histogram: HistogramSnapshot;
}

function ackHistograms(): Record<OtlpProtocol, Histogram> {
  return { 'http-json': new Histogram(), 'http-protobuf': new Histogram(), grpc: new Histogram() };
}

/** The receiver's counters, shared by its transports. */
export class OtlpCounters {
  private readonly stats = emptyReceiverStats();
  /** Per signal and protocol: how long acknowledged requests took, from arrival to their answer. */
  private readonly acks: Record<Signal, Record<OtlpProtocol, Histogram>> = { traces: ackHistograms(), logs: ackHistograms() };

  /**
   * A request answered with success (an ack, partial success included) after `seconds`: from its
   * arrival (a gRPC call's start, an HTTP request's head read) to its answer, so any wait for
   * admission, the read, the decode and the durable append are in it.
   */
  observeAck(signal: Signal, protocol: OtlpProtocol, seconds: number): void {
    this.acks[signal][protocol].observe(seconds);
  }

  /** The ack durations so far, per signal and protocol. */
  ackDurations(): AckDurations[] {
    return (['traces', 'logs'] as const).flatMap((signal) =>
      OTLP_PROTOCOLS.map((protocol) => ({ signal, protocol, histogram: this.acks[signal][protocol].snapshot() })),
    );
  }

  /** Adds `delta` to the signal's totals and, when the protocol is known, to that protocol's counts. */
  add(signal: Signal, protocol: OtlpProtocol | undefined, delta: Partial<OtlpCounts>): void {
    const total = this.stats[signal];
    const perProtocol = protocol ? total.protocols[protocol] : undefined;
    for (const key of Object.keys(delta) as Array<keyof OtlpCounts>) {
      const n = delta[key]!;
      total[key] += n;
      if (perProtocol) perProtocol[key] += n;
    }
  }

  /** A copy of the counts. */
  snapshot(): OtlpReceiverStats {
    return structuredClone(this.stats);
  }
}

/** What both transports (HTTP and gRPC) are given by the receiver. */
export interface OtlpTransportOptions {
  /** Component id, for messages and logs. */
  id: string;
  /** `host:port` to listen on (port 0 picks a free port, see address()). */
  endpoint: string;
  bearerToken?: string;
  consumers: Partial<Record<Signal, IngestConsumer>>;
  logger: Logger;
  /** Counters, shared with the receiver. */
  counters: OtlpCounters;
  shutdownGraceMs?: number;
  now?: () => number;
  /** Signals forwarded downstream: every record is kept (not only the relevant ones). */
  forward?: Partial<Record<Signal, boolean>>;
  /** Signals whose pipelines want activity markers (src/model/activity.ts). */
  markers?: Partial<Record<Signal, boolean>>;
  /** Decodes large bodies on worker threads (decode-pool.ts); without it the event loop decodes every body. */
  decoder?: DecodePool;
  /** Told of every request from its start until it is answered (src/internal/ingest-activity.ts). */
  activity?: IngestActivity;
  /** Bounds the bytes of requests held at once and waiting (admission.ts), across the receiver's protocols; a limit of 0 holds nothing back. */
  admission: Admission;
}

/** What an accepted export request answers: the count of rejected records and a message (may be a warning). */
export interface ExportOutcome {
  rejected: number;
  /** Empty when there is nothing to report. */
  errorMessage: string;
  relevant: number;
  irrelevant: number;
  appended: number;
  duplicates: number;
}

/** How a transport's bodies of `signal` are decoded and mapped: forwarded or not, with markers or not, on its clock. */
export function bodyOptions(options: Pick<OtlpTransportOptions, 'forward' | 'markers' | 'now'>, signal: Signal): BodyOptions {
  return { forward: options.forward?.[signal] === true, markers: options.markers?.[signal] === true, now: options.now };
}

/**
 * Hands the events of a body decoded and mapped (decode-pool.ts `decodeAndMap`) to the
 * consumer; resolves once they are durably appended. A consumer rejection propagates (the
 * transport answers with a refusal) and nothing is counted as accepted.
 */
export async function exportMapped(
  signal: Signal,
  input: MappedBody,
  consumer: IngestConsumer,
  counters: OtlpCounters,
  protocol: OtlpProtocol,
): Promise<ExportOutcome> {
  const decodeStats: DecodeStats = input.stats;
  const mapped = input.mapped;
  // The sessions named by every record of the request, kept or not: their traces' other records take them.
  const traceSessions = mapped.traceSessions;
  for (const [traceId, session] of input.sessions) if (!traceSessions.has(traceId)) traceSessions.set(traceId, session);
  const result = mapped.events.length > 0 || traceSessions.size > 0 ? await consumer(mapped.events, { traceSessions }) : { appended: 0, duplicates: 0 };

  const rejected = decodeStats.rejected + mapped.rejected;
  // Records the decoder checked but did not build (skipIrrelevant) are accepted and not relevant.
  const irrelevant = mapped.irrelevant + input.skipped;
  counters.add(signal, protocol, {
    accepted: mapped.relevant + irrelevant,
    irrelevant,
    rejected,
    appended: result.appended,
    duplicates: result.duplicates,
    droppedAttributes: decodeStats.droppedAttributes,
    truncatedValues: decodeStats.truncatedValues + decodeStats.truncatedDepth,
  });
  return {
    rejected,
    errorMessage: summarize(decodeStats, mapped.messages),
    relevant: mapped.relevant,
    irrelevant,
    appended: result.appended,
    duplicates: result.duplicates,
  };
}

/** How a transport answers a failed append: retry later (backpressure or unavailable) or an internal error. */
export interface Refusal {
  reason: 'backpressure' | 'unavailable' | 'internal';
  message: string;
}

export function refusalOf(err: unknown): Refusal {
  if (err instanceof VigilError) {
    if (err.code === 'VIGIL_INGEST_BACKPRESSURE') {
      return { reason: 'backpressure', message: `ingest backlog is over its limit, retry later: ${err.message}` };
    }
    if (err.transient || err.code === 'VIGIL_STORE_UNAVAILABLE' || err.code === 'VIGIL_SHUTDOWN') {
      return { reason: 'unavailable', message: `records could not be stored, retry later: ${err.message}` };
    }
  }
  return { reason: 'internal', message: `records could not be stored: ${errorMessage(err)}` };
}
