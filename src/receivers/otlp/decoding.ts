/**
 * What the OTLP/JSON and OTLP/protobuf decoders share: record-level errors with their paths, the
 * bound counters a rejected record must not leave behind, and the two modes of every record walk —
 * build the record, or only check it (validate it, count its bounds, collect the facts the
 * relevance test reads) without building anything.
 */
import { sessionOf } from './mapping/common.ts';
import type { TraceIdAt } from './mapping/relevance.ts';
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
  /** Trace id → session named by the skipped records (see noteSkippedSession). */
  sessions: Map<string, string>;
}

/**
 * A skipped record that names a session (on itself or its resource) still tells its trace's
 * session (DESIGN 3.3): the fact is kept, the record is not. The trace id is only read then, and
 * once per trace and request (the first skipped record of the trace that names a session).
 */
export function noteSkippedSession(
  sessions: Map<string, string>,
  checking: Checking<{ attributes: Attributes } & TraceIdAt>,
  resource: Attributes,
  traceId: () => string | undefined,
): void {
  const facts = checking.facts;
  if (facts.sameTrace) return;
  const session = sessionOf(facts.attributes, resource);
  if (session === undefined) return;
  const id = traceId();
  if (id === undefined || sessions.has(id)) return;
  sessions.set(id, session);
  checking.notedTraceAt = facts.traceIdAt;
}

/** Whether `len` bytes at `a` and at `b` of `buf` are equal (either < 0: no). */
export function sameBytes(buf: Buffer, a: number, b: number, len: number): boolean {
  if (a < 0 || b < 0) return false;
  for (let i = 0; i < len; i++) if (buf[a + i] !== buf[b + i]) return false;
  return true;
}

/** Strings up to this many bytes (attribute keys, names, model ids) are read without a Buffer call when ASCII, by both decoders. */
export const SHORT_STRING = 48;

/**
 * The strings shortAscii made last, by a hash of their bytes: attribute keys, span names and
 * session ids repeat in every request, so most short strings are found here and not made again (no
 * allocation). One string per slot, a later one replacing it: bounded (at most SHORT_STRINGS ×
 * SHORT_STRING characters), and a miss costs no more than making the string.
 */
const SHORT_STRINGS = 1024;
const madeStrings: string[] = new Array<string>(SHORT_STRINGS).fill('');

/** An ASCII string (its bytes, once made: see madeStrings); undefined when a byte is not ASCII. */
export function shortAscii(buf: Buffer, start: number, end: number): string | undefined {
  let h = end - start;
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    if (c >= 0x80) return undefined;
    h = Math.imul(h ^ c, 0x01000193);
  }
  const slot = (h ^ (h >>> 16)) & (SHORT_STRINGS - 1);
  const made = madeStrings[slot]!;
  if (made.length === end - start) {
    let i = 0;
    while (i < made.length && made.charCodeAt(i) === buf[start + i]) i++;
    if (i === made.length) return made;
  }
  // ASCII bytes read as latin1 are the UTF-8 string.
  const text = buf.toString('latin1', start, end);
  madeStrings[slot] = text;
  return text;
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
  /** Where the trace id of the last skipped record whose session was kept is (-1: none); see TraceIdAt.sameTrace. */
  notedTraceAt: number;
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
