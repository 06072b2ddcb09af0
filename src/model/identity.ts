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
    input += `${Buffer.byteLength(s)}:${s}`;
  }
  return input;
}

/**
 * Group keys recently computed, by their hash input: a group's failures repeat (that is what a
 * group is), and a key is computed for every one. Bounded; emptied when full.
 */
const GROUP_KEYS_CACHED = 10_000;
const groupKeys = new Map<string, string>();

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
  const parts = ['group', g.scope, g.operation ?? '', g.revision, g.fingerprint];
  // Length-prefixed parts: a key with a workspace never equals one without.
  if (g.workspace !== undefined) parts.push(g.workspace);
  const input = hashInput(parts);
  let key = groupKeys.get(input);
  if (key === undefined) {
    if (groupKeys.size >= GROUP_KEYS_CACHED) groupKeys.clear();
    key = 'g_' + sha256Hex(input).slice(0, 32);
    groupKeys.set(input, key);
  }
  return key;
}

export function occurrenceId(groupKeyValue: string, eventId: string): string {
  return 'o_' + stableHash(['occurrence', groupKeyValue, eventId]);
}

export function workId(groupKeyValue: string, generation: number): string {
  return 'w_' + stableHash(['work', groupKeyValue, generation]);
}

/** Work-event ids: one per (event type, work item, occurrence), stable across redelivery and replay. */
export function workEventId(type: string, work: string, occurrence: string): string {
  return stableHash(['work-event', type, work, occurrence]);
}

export const UNRESOLVED_REVISION = 'unresolved_revision';
export const UNKNOWN_REVISION = 'unknown';
