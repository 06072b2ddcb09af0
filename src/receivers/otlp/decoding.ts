/**
 * What the OTLP/JSON and OTLP/protobuf decoders share: record-level errors with their paths, the
 * bound counters a rejected record must not leave behind, and the two modes of every record walk —
 * build the record, or only check it (validate it, count its bounds, collect the facts the
 * relevance test reads) without building anything.
 */
import { addMessage } from './normalized.ts';
import type { Attributes, DecodeStats, NormalizedScope } from './normalized.ts';

/** The names of one signal's request messages, for paths and messages. */
export interface RequestNames {
  message: string;
  resources: string;
  scopes: string;
  records: string;
}

export const TRACES_REQUEST: RequestNames = { message: 'ExportTraceServiceRequest', resources: 'resourceSpans', scopes: 'scopeSpans', records: 'spans' };
export const LOGS_REQUEST: RequestNames = { message: 'ExportLogsServiceRequest', resources: 'resourceLogs', scopes: 'scopeLogs', records: 'logRecords' };

/** The records of a request, by (resource, scope), before the signal names them spans or logs. */
export interface DecodedRecords<R, M = never> {
  /** `marks`: records the relevance test kept as activity marks (made from their facts, not built); absent when none. */
  groups: Array<{ resource: Attributes; scope: NormalizedScope; records: R[]; marks?: M[] }>;
  stats: DecodeStats;
  /** Records checked and let go by the relevance test (see DecodeOptions). */
  skipped: number;
}

/** What the relevance test says of a checked record: let it go, build it, or keep it as an activity mark. */
export type RecordVerdict = 'skip' | 'build' | 'mark';

/**
 * A problem with one field of one record (or of a resource or scope): rejects those records only.
 * `path` is relative to the record and grows as the error passes up through the values that hold
 * the field (see `under`), so paths are only built for values that are wrong.
 */
export class FieldError extends Error {
  constructor(
    public path: string,
    readonly problem: string,
  ) {
    super(problem);
  }

  /** `prefix.path: problem`, or `prefix: problem` for the value itself. */
  at(prefix: string): string {
    return `${joinPath(prefix, this.path)}: ${this.problem}`;
  }
}

/** Prefixes the path of a FieldError thrown below `segment`; other errors pass unchanged. */
export function under(err: unknown, segment: string): unknown {
  if (err instanceof FieldError) err.path = joinPath(segment, err.path);
  return err;
}

/**
 * `name[index]`. A function on purpose: a template naming a loop's index inside the loop (even in
 * a catch block that never runs) makes V8 compile the loop several times slower.
 */
export function itemPath(name: string, index: number): string {
  return `${name}[${index}]`;
}

function joinPath(prefix: string, path: string): string {
  if (path === '') return prefix;
  if (prefix === '') return path;
  return path.charCodeAt(0) === 0x5b /* [ */ ? prefix + path : `${prefix}.${path}`;
}

/**
 * A record walk in check mode: the facts the relevance test reads, filled by the walk, and
 * `mustBuild` when the walk cannot tell cheaply (an attribute list over the cap, whose distinct
 * keys only a build counts): then the record is built whatever the facts say.
 */
export interface Checking<F> {
  facts: F;
  mustBuild: boolean;
  /** Activity marks are wanted: the walk also reads what a mark carries (name, ids, times, the marker attributes). */
  markers: boolean;
}

export type BoundCounts = readonly [number, number, number];

/** The bound counters, to restore when a record is rejected or walked again. */
export function countsOf(stats: DecodeStats): BoundCounts {
  return [stats.droppedAttributes, stats.truncatedValues, stats.truncatedDepth];
}

export function restoreCounts(stats: DecodeStats, counts: BoundCounts): void {
  [stats.droppedAttributes, stats.truncatedValues, stats.truncatedDepth] = counts;
}

/** Counts a rejected record: its bound counts are undone and its problem reported under its path. */
export function rejectRecord(stats: DecodeStats, before: BoundCounts, err: FieldError, recordPath: string): void {
  restoreCounts(stats, before);
  stats.rejected++;
  addMessage(stats, `${err.at(recordPath)} (record rejected)`);
}

/** Rejects the `n` records under a resource or scope that could not be decoded. */
export function rejectAll(stats: DecodeStats, n: number, message: string): void {
  stats.rejected += n;
  addMessage(stats, message);
}

/** Sets a key without letting `__proto__` reach the prototype. */
export function setKey<V>(target: { [key: string]: V }, key: string, value: V): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
