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
  const key = flatId(G, sha256Hex(hashInput(parts)));
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
  return flatId(O, sha256Hex(hashInput(['occurrence', groupKeyValue, eventId])));
}

export function workId(groupKeyValue: string, generation: number): string {
  return 'w_' + stableHash(['work', groupKeyValue, generation]);
}

/** Work-event ids: one per (event type, work item, occurrence), stable across redelivery and replay. */
export function workEventId(type: string, work: string, occurrence: string): string {
  return flatId(NO_PREFIX, sha256Hex(hashInput(['work-event', type, work, occurrence])));
}

/**
 * `prefix + hex.slice(0, 32)` as one flat string. The concatenation of a slice is a rope over a
 * slice over the 64-digit digest — three objects kept as long as the id is (the page, the outbox,
 * the groups), and flattened again by every Map that hashes it; ids are made for every failure.
 * The character codes go through a scratch array per prefix length, reused (one thread).
 */
function flatId(prefix: readonly number[], hex: string): string {
  const codes = prefix.length === 0 ? ID_CODES_32 : ID_CODES_34;
  for (let i = 0; i < prefix.length; i++) codes[i] = prefix[i]!;
  for (let i = 0; i < 32; i++) codes[prefix.length + i] = hex.charCodeAt(i);
  return String.fromCharCode.apply(null, codes);
}
const ID_CODES_32: number[] = new Array<number>(32).fill(48);
const ID_CODES_34: number[] = new Array<number>(34).fill(48);
const NO_PREFIX: readonly number[] = [];
const G = [103, 95]; // g_
const O = [111, 95]; // o_

export const UNRESOLVED_REVISION = 'unresolved_revision';
export const UNKNOWN_REVISION = 'unknown';
