/**
 * Stable identities (DESIGN 3.3). Every hash input is length-prefixed so that ("ab","c") and
 * ("a","bc") never collide, and ids carry no wall-clock or process state: a replay or another
 * sidecar computes the same ids for the same evidence.
 */
import * as crypto from 'node:crypto';

/** One-shot SHA-256 in hex: `crypto.hash` (Node ≥ 20.12), else a Hash object (same digest). */
const sha256Hex: (input: string) => string =
  typeof crypto.hash === 'function' ? (input) => crypto.hash('sha256', input, 'hex') : (input) => crypto.createHash('sha256').update(input).digest('hex');

export function stableHash(parts: ReadonlyArray<string | number | null | undefined>, length = 32): string {
  return sha256Hex(hashInput(parts)).slice(0, length);
}

/**
 * The length-prefixed parts as one string: hashing it in one call gives the same bytes as updating
 * the hash part by part, without a Hash object and two native calls per part.
 */
function hashInput(parts: ReadonlyArray<string | number | null | undefined>): string {
  let input = '';
  for (const p of parts) {
    const s = p === null || p === undefined ? '\u0000' : String(p);
    input += `${utf8Length(s)}:${s}`;
  }
  return input;
}

/**
 * `Buffer.byteLength(s)` (UTF-8), counted here for ASCII strings — ids are mostly made of them —
 * instead of a call into C++ per part; any other string is left to `Buffer.byteLength`.
 */
function utf8Length(s: string): number {
  if (s.length > 64) return Buffer.byteLength(s);
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.byteLength(s);
  return s.length;
}

/**
 * Group keys recently computed: a group's failures repeat (that is what a group is), and a key is
 * computed for every one. Looked up by fingerprint, then by comparing the other parts, so that a
 * hit builds no string (hashing a string as long as the hash input cost as much as the rest of
 * the lookup). Bounded; emptied when full.
 */
const GROUP_KEYS_CACHED = 10_000;
const GROUP_KEYS_PER_FINGERPRINT = 8;
const groupKeys = new Map<string, CachedGroupKey[]>();
let groupKeysCached = 0;

interface CachedGroupKey {
  scope: string;
  operation: string;
  revision: string;
  workspace: string | undefined;
  key: string;
}

export interface GroupKeyInput {
  /** The service, or the session when `scope: session`. */
  scope: string;
  operation: string | undefined;
  revision: string;
  fingerprint: string;
  /** The workspace, when the rule set groups by it (`rules: reference`); absent leaves the key as it always was. */
  workspace?: string;
}

export function groupKey(g: GroupKeyInput): string {
  const operation = g.operation ?? '';
  const same = groupKeys.get(g.fingerprint);
  if (same) {
    for (const c of same) {
      if (c.scope === g.scope && c.operation === operation && c.revision === g.revision && c.workspace === g.workspace) return c.key;
    }
  }
  const parts = ['group', g.scope, operation, g.revision, g.fingerprint];
  // Length-prefixed parts: a key with a workspace never equals one without.
  if (g.workspace !== undefined) parts.push(g.workspace);
  const key = flatId('g_', sha256Hex(hashInput(parts)));
  if (groupKeysCached >= GROUP_KEYS_CACHED) {
    groupKeys.clear();
    groupKeysCached = 0;
  }
  const entry: CachedGroupKey = { scope: g.scope, operation, revision: g.revision, workspace: g.workspace, key };
  const list = groupKeys.get(g.fingerprint);
  if (!list) groupKeys.set(g.fingerprint, [entry]);
  // A fingerprint seen in many scopes (one per session with `scope: session`) keeps its newest few:
  // a hit must stay a short scan.
  else {
    if (list.length >= GROUP_KEYS_PER_FINGERPRINT) list.shift();
    list.push(entry);
  }
  groupKeysCached++;
  return key;
}

/** One per failure: a flat string (see flatId), as the work-event id below. */
export function occurrenceId(groupKeyValue: string, eventId: string): string {
  // hashInput(['occurrence', groupKeyValue, eventId]) written out: no parts array, and the constant
  // part's prefix is not measured again for every failure.
  return flatId('o_', sha256Hex('10:occurrence' + lengthPrefixed(groupKeyValue) + lengthPrefixed(eventId)));
}

export function workId(groupKeyValue: string, generation: number): string {
  return 'w_' + stableHash(['work', groupKeyValue, generation]);
}

/** Work-event ids: one per (event type, work item, occurrence), stable across redelivery and replay. */
export function workEventId(type: string, work: string, occurrence: string): string {
  // hashInput(['work-event', type, work, occurrence]) written out, as occurrenceId's.
  return flatId('', sha256Hex('10:work-event' + lengthPrefixed(type) + lengthPrefixed(work) + lengthPrefixed(occurrence)));
}

/**
 * One part of hashInput: `byteLength:part`, an absent part NUL and anything else its String (as
 * there: the types ask for strings, a JavaScript caller may pass anything).
 */
function lengthPrefixed(p: string | null | undefined): string {
  const s = typeof p === 'string' ? p : p === null || p === undefined ? '\u0000' : String(p);
  return utf8Length(s) + ':' + s;
}

/**
 * `prefix + hex.slice(0, 32)` as one flat string. The concatenation of a slice is a rope over a
 * slice over the 64-digit digest — three objects kept as long as the id is (the page, the outbox,
 * the groups), and flattened again by every Map that hashes it; ids are made for every failure.
 * Reading a character of the rope flattens it in place (one copy, 30–40 ns): the rope then points
 * to its flat copy alone, and the next scavenge replaces it by that copy (V8 short-cuts a
 * flattened rope), so the digest and the slice are garbage at once. Copying the characters through
 * an array into `String.fromCharCode.apply` (as before) cost 170 ns an id.
 */
function flatId(prefix: string, hex: string): string {
  // A rope only from 13 characters on (every id is longer). Without a prefix, the first digit and a
  // slice of the rest, so that it is a rope too rather than a slice that keeps the whole digest.
  const id = prefix === '' ? hex[0]! + hex.slice(1, 32) : prefix + hex.slice(0, 32);
  // The read is what flattens it; kept in a module variable so that the optimizing compiler cannot
  // drop it as unused.
  _flattenedCode = id.charCodeAt(0);
  return id;
}
let _flattenedCode = 0;

export const UNRESOLVED_REVISION = 'unresolved_revision';
export const UNKNOWN_REVISION = 'unknown';
