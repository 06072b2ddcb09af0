/**
 * Fingerprint version 3: the identity of a failure, from what the detector found (finding.ts) rather
 * than from the signature's text alone.
 *
 * - **stack** (a Python/JVM/Node/Go exception with frames): the chain of exception types and the
 *   innermost (≤ 3) frames of the program's own code — `module:function`, never line numbers, with
 *   recursion collapsed and generated names normalized. The frames outweigh the message: it only
 *   counts when the stack is weak (no in-app frame, only top-level code such as `<module>` or
 *   `main`, or a generic type — `Error`, `TypeError`, `RuntimeError`… — raised from top-level or
 *   anonymous code, where different failures would otherwise look alike).
 * - **diag** (compiler, linker, panic): tool, code (`E0308`, `TS2304`, `-Werror=…`), the file's
 *   basename and the normalized message — never the line and column.
 * - **status**: the signal that killed the process (`SIGSEGV`), or a nameless exit status.
 * - **text**: the normalized telling line.
 *
 * Version 3 (issue #13) replaced version 2 whole: v2's weak-stack test never matched a Node.js
 * stack, and v3 adds the generic-type rule, signal identities, exit statuses, wrapper lines
 * identified by their inner error, and masks for JVM identity hashes, short git hashes and quoted
 * relative paths. Every failure gets a new fingerprint once, visibly (`v3:`), rather than some groups
 * being silently merged or split.
 *
 * Messages are normalized by normalize.ts and cut to 160 characters after masking (so a long
 * volatile part before the cut cannot move it). The result is `v3:` + 16 hex digits of a 64-bit
 * hash over the length-prefixed fields (a grouping key, not a cryptographic digest: a per-call
 * SHA-256 cost as much as the rest of naming a failure); the version keeps stored groups
 * from silently regrouping when the algorithm changes (v1 stays in fingerprint.ts for `rules:
 * reference`).
 */
import type { FailureKey } from './finding.ts';
import { normalizeMessage } from './normalize.ts';

export const FINGERPRINT_VERSION = 'v3';
/** Longest normalized message that counts, in UTF-16 code units. */
const MESSAGE_MAX = 160;
/** Longest raw text handed to normalization (a 1 MB line is identified by its start). */
const RAW_MAX = 2048;

/** The normalized form of a message as it enters the fingerprint. */
export function fingerprintMessage(message: string): string {
  const raw = message.length > RAW_MAX ? message.slice(0, RAW_MAX) : message;
  const normalized = normalizeMessage(raw);
  return normalized.length > MESSAGE_MAX ? normalized.slice(0, MESSAGE_MAX) : normalized;
}

/** The fields a key contributes, in order. */
export function fingerprintFields(key: FailureKey): string[] {
  switch (key.kind) {
    case 'stack':
      return ['stack', key.types.join(' > '), key.frames.join(' | '), key.weak ? templateOf(fingerprintMessage(firstLine(key.message))) : ''];
    case 'diag':
      return ['diag', key.tool, key.code, key.file.toLowerCase(), fingerprintMessage(key.message)];
    case 'status':
      return ['status', key.name, key.code === undefined ? '' : String(key.code)];
    case 'text':
      return ['text', fingerprintMessage(key.text)];
  }
}

/** `v3:` + 16 hex digits of the 64-bit hash of the length-prefixed fields of the key. */
export function fingerprintV3(key: FailureKey): string {
  return versionedHash64(fingerprintFields(key));
}

/** `v3:` + `hash64(parts)`, made as one flat string (see hexDigits). */
export function versionedHash64(parts: readonly string[]): string {
  mix64(parts);
  return hexDigits(VERSIONED_CODES, VERSION_PREFIX.length, mixedA, mixedB);
}

/**
 * A 64-bit hash of a sequence of strings, each taken as its length and then its UTF-16 code units
 * two to a 32-bit word (so the sequence is unambiguous), through two multiply–rotate lanes with
 * MurmurHash3's constants, crossed and avalanched at the end; 16 hex digits. 32-bit integer
 * arithmetic only: the same on every platform and Node version.
 */
export function hash64(parts: readonly string[]): string {
  mix64(parts);
  return hexDigits(PLAIN_CODES, 0, mixedA, mixedB);
}

/** The two 32-bit halves of the last mix64 (one thread: read at once). */
let mixedA = 0;
let mixedB = 0;

function mix64(parts: readonly string[]): void {
  let h1 = 0x2f3c1a5b;
  let h2 = 0x6d1e8c47;
  for (let p = 0; p < parts.length; p++) {
    const s = parts[p]!;
    const n = s.length;
    for (let i = -2; i < n; i += 2) {
      const w = i < 0 ? n : i + 1 < n ? s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16) : s.charCodeAt(i);
      let a = Math.imul(h1 ^ w, 0xcc9e2d51);
      h1 = (Math.imul((a << 13) | (a >>> 19), 5) + 0xe6546b64) | 0;
      a = Math.imul(h2 ^ w, 0x1b873593);
      h2 = (Math.imul((a << 17) | (a >>> 15), 5) + 0x561ccd1b) | 0;
    }
  }
  let a = fmix((h1 + h2) | 0);
  let b = fmix((h2 + h1 + h2) | 0);
  a = (a + b) | 0;
  b = (b + a) | 0;
  mixedA = a;
  mixedB = b;
}

function fmix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** Character codes of the hex digits. */
const HEX_CODES = Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
const VERSION_PREFIX = Array.from(FINGERPRINT_VERSION + ':', (c) => c.charCodeAt(0));
/** Scratch for the digits (behind the prefix, in VERSIONED_CODES), reused (one thread). */
const PLAIN_CODES: number[] = new Array<number>(16).fill(48);
const VERSIONED_CODES: number[] = [...VERSION_PREFIX, ...PLAIN_CODES];

/**
 * `a` then `b` as 8 hex digits each, from `codes[at]` on, and `codes` as one flat string: the
 * concatenation of digit pairs it replaces is a rope (and `v3:` + a rope another), which every Map
 * keyed by a fingerprint — the group keys' cache, once per failure — flattens again, allocating,
 * before it can hash it.
 */
function hexDigits(codes: number[], at: number, a: number, b: number): string {
  for (let i = 0; i < 8; i++) {
    codes[at + i] = HEX_CODES[(a >>> (28 - 4 * i)) & 15]!;
    codes[at + 8 + i] = HEX_CODES[(b >>> (28 - 4 * i)) & 15]!;
  }
  return String.fromCharCode.apply(null, codes);
}

// `invalid port: auto`, `unsupported mode: fast`: a single word after the message's last `: ` is the
// value the program was given, not the failure; an upper-case code (`ECONNREFUSED`) or a
// placeholder is kept.
const TRAILING_VALUE = /: (\S+)$/;
const KEPT = /^(?:[A-Z][A-Z0-9_]*|<\w+>)$/;

/** A weak stack's message as a template: its trailing value masked (see TRAILING_VALUE). */
function templateOf(message: string): string {
  const m = TRAILING_VALUE.exec(message);
  if (!m || KEPT.test(m[1]!)) return message;
  return message.slice(0, m.index) + ': <value>';
}

function firstLine(text: string): string {
  const nl = text.indexOf('\n');
  return nl < 0 ? text : text.slice(0, nl);
}
