/**
 * The `otlp` receiver's own metrics: one counter family per meaning, each split by signal and wire
 * protocol (`http-json`, `http-protobuf`, `grpc`; `http` for HTTP requests refused before their
 * encoding was known, which no protocol counts).
 */
import type { ComponentMetric } from '../../component.ts';
import type { AdmissionStats } from './admission.ts';
import type { DecodePoolStats } from './decode-pool.ts';
import { OTLP_PROTOCOLS, type AckDurations, type OtlpCounts, type OtlpReceiverStats } from './ingest.ts';

const FAMILIES: ReadonlyArray<[keyof OtlpCounts, string, string]> = [
  ['requests', 'vigil_receiver_requests_total', 'Export requests received.'],
  ['refused', 'vigil_receiver_refused_requests_total', 'Export requests refused as a whole (HTTP 4xx/5xx, gRPC non-OK); nothing from them was kept.'],
  ['accepted', 'vigil_receiver_accepted_records_total', 'Spans and log records accepted, whether the processors need them or not.'],
  ['rejected', 'vigil_receiver_rejected_records_total', 'Spans and log records rejected one by one (OTLP partial success).'],
  [
    'irrelevant',
    'vigil_receiver_irrelevant_records_total',
    'Accepted records the processors do not need (successful spans, unremarkable logs): counted, not stored.',
  ],
  ['appended', 'vigil_receiver_appended_records_total', 'Records durably appended to the ingest log.'],
  ['duplicates', 'vigil_receiver_duplicate_records_total', 'Records the ingest log already held (redeliveries), counted once.'],
  ['droppedAttributes', 'vigil_receiver_dropped_attributes_total', 'Attributes dropped while decoding, over the per-record limit.'],
  ['truncatedValues', 'vigil_receiver_truncated_values_total', 'Attribute values and bodies cut to the size limit while decoding.'],
];

/** Keys whose totals can exceed the sum over protocols (requests refused before decoding). */
const UNATTRIBUTED: ReadonlySet<keyof OtlpCounts> = new Set(['requests', 'refused']);

export function otlpReceiverMetrics(stats: OtlpReceiverStats): ComponentMetric[] {
  const out: ComponentMetric[] = [];
  for (const [key, name, help] of FAMILIES) {
    for (const [signal, s] of Object.entries(stats)) {
      let attributed = 0;
      for (const protocol of OTLP_PROTOCOLS) {
        const value = s.protocols[protocol][key];
        attributed += value;
        out.push({ name, type: 'counter', help, labels: { signal, protocol }, value });
      }
      const rest = s[key] - attributed;
      if (UNATTRIBUTED.has(key) || rest !== 0) out.push({ name, type: 'counter', help, labels: { signal, protocol: 'http' }, value: rest });
    }
  }
  return out;
}

/** Admission control's state (admission.ts): what it holds and keeps waiting now, and what it made wait or refused. */
export function admissionMetrics(stats: AdmissionStats): ComponentMetric[] {
  return [
    {
      name: 'vigil_receiver_admitted_bytes',
      type: 'gauge',
      help: 'Bytes of the requests admitted and not yet answered (admission.request_limit_mib bounds them).',
      labels: {},
      value: stats.admittedBytes,
    },
    {
      name: 'vigil_receiver_waiting_bytes',
      type: 'gauge',
      help: 'Bytes of the requests waiting to be admitted (admission.waiting_limit_mib bounds them).',
      labels: {},
      value: stats.waitingBytes,
    },
    { name: 'vigil_receiver_waiting_requests', type: 'gauge', help: 'Requests waiting to be admitted, their bodies unread.', labels: {}, value: stats.waiting },
    { name: 'vigil_receiver_admission_waited_total', type: 'counter', help: 'Requests that had to wait for admission.', labels: {}, value: stats.waited },
    {
      name: 'vigil_receiver_admission_refused_total',
      type: 'counter',
      help: 'Requests refused because the waiting was full (HTTP 429, gRPC RESOURCE_EXHAUSTED).',
      labels: {},
      value: stats.refused,
    },
  ];
}

/** How long acknowledged export requests took, per signal and protocol (OtlpCounters.observeAck). */
export function ackMetrics(acks: readonly AckDurations[]): ComponentMetric[] {
  return acks.map(({ signal, protocol, histogram }) => ({
    name: 'vigil_receiver_ack_duration_seconds',
    type: 'histogram',
    help: 'Export requests answered with success (partial success included), by the time from their arrival to the answer: admission, read, decode and the durable append.',
    labels: { signal, protocol },
    histogram,
  }));
}

/**
 * Where the decode pool (`decode_threads` > 0) decoded and mapped the bodies it was given, and how
 * many of its threads failed; nothing without a pool. Says whether the thread is in use: OTLP/
 * protobuf without markers to map, small and forwarded bodies, and bodies past a full queue or a
 * failed thread, stay on the event loop.
 */
export function decodeMetrics(stats: DecodePoolStats | undefined): ComponentMetric[] {
  if (!stats) return [];
  const help =
    'Request bodies the decode pool was given (decode_threads > 0), by where they were decoded and mapped: on a thread, or on the event loop (OTLP/protobuf without activity markers to map, small and forwarded bodies, full queues, failed threads).';
  return [
    { name: 'vigil_receiver_decoded_bodies_total', type: 'counter', help, labels: { on: 'thread' }, value: stats.onThreads },
    { name: 'vigil_receiver_decoded_bodies_total', type: 'counter', help, labels: { on: 'event_loop' }, value: stats.onLoop },
    {
      name: 'vigil_receiver_decode_thread_failures_total',
      type: 'counter',
      help: 'Decode threads that failed or stopped while in use; after 3, every body is decoded on the event loop.',
      labels: {},
      value: stats.failures,
    },
  ];
}
