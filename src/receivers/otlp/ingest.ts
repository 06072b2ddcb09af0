/**
 * The protocol-independent half of an OTLP export: decoded records → AgentEvents → durable append,
 * with the partial-success accounting and the counters. The HTTP transport (and later gRPC) only
 * reads bodies, decodes them and turns the outcome or the refusal into its own answer.
 */
import type { IngestConsumer, Signal } from '../../component.ts';
import { VigilError, errorMessage } from '../../errors.ts';
import { mapLogs, mapTraces } from './mapping.ts';
import type { MapOptions } from './mapping.ts';
import { summarize } from './normalized.ts';
import type { DecodeStats, DecodedLogs, DecodedTraces } from './normalized.ts';

/** Counters of one signal, kept on the receiver instance. */
export interface OtlpSignalStats {
  /** Export requests received for the signal. */
  requests: number;
  /** Requests refused as a whole (4xx/5xx answers); nothing from them was kept. */
  refused: number;
  /** Records accepted (relevant and not relevant). */
  accepted: number;
  /** Records rejected individually (OTLP partial success). */
  rejected: number;
  /** Accepted records that the chain does not need (successful spans, empty log records). */
  irrelevant: number;
  /** Events durably appended by the consumer, and those it already had (redeliveries). */
  appended: number;
  duplicates: number;
  /** Values bounded while decoding. */
  droppedAttributes: number;
  truncatedValues: number;
}

export type OtlpReceiverStats = Record<Signal, OtlpSignalStats>;

export function emptyReceiverStats(): OtlpReceiverStats {
  const zero = (): OtlpSignalStats => ({
    requests: 0,
    refused: 0,
    accepted: 0,
    rejected: 0,
    irrelevant: 0,
    appended: 0,
    duplicates: 0,
    droppedAttributes: 0,
    truncatedValues: 0,
  });
  return { traces: zero(), logs: zero() };
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

export type DecodedSignal = { signal: 'traces'; decoded: DecodedTraces } | { signal: 'logs'; decoded: DecodedLogs };

/**
 * Maps the decoded records and hands the relevant ones to the consumer; resolves once they are
 * durably appended. A consumer rejection propagates (the transport answers with a refusal) and
 * nothing is counted as accepted.
 */
export async function exportDecoded(
  input: DecodedSignal,
  consumer: IngestConsumer,
  stats: OtlpSignalStats,
  options: MapOptions = {},
): Promise<ExportOutcome> {
  const decodeStats: DecodeStats = input.decoded.stats;
  const mapped = input.signal === 'traces' ? mapTraces(input.decoded.groups, options) : mapLogs(input.decoded.groups, options);
  const result = mapped.events.length > 0 ? await consumer(mapped.events) : { appended: 0, duplicates: 0 };

  const rejected = decodeStats.rejected + mapped.rejected;
  stats.accepted += mapped.relevant + mapped.irrelevant;
  stats.irrelevant += mapped.irrelevant;
  stats.rejected += rejected;
  stats.appended += result.appended;
  stats.duplicates += result.duplicates;
  stats.droppedAttributes += decodeStats.droppedAttributes;
  stats.truncatedValues += decodeStats.truncatedValues + decodeStats.truncatedDepth;
  return {
    rejected,
    errorMessage: summarize(decodeStats, mapped.messages),
    relevant: mapped.relevant,
    irrelevant: mapped.irrelevant,
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
