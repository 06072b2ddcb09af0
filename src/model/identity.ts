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
  // One string hashed in one call: the same bytes as updating the hash part by part, without a
  // Hash object and two native calls per part (this runs several times per failure on the hot path).
  let input = '';
  for (const p of parts) {
    const s = p === null || p === undefined ? '\u0000' : String(p);
    input += `${Buffer.byteLength(s)}:${s}`;
  }
  return sha256Hex(input).slice(0, length);
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
  const parts = ['group', g.scope, g.operation ?? '', g.revision, g.fingerprint];
  // Length-prefixed parts: a key with a workspace never equals one without.
  if (g.workspace !== undefined) parts.push(g.workspace);
  return 'g_' + stableHash(parts);
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
