/**
 * Fingerprint version 2: the identity of a failure, from what the detector found (finding.ts) rather
 * than from the signature's text alone.
 *
 * - **stack** (a Python/JVM/Node/Go exception with frames): the chain of exception types and the
 *   innermost (≤ 3) frames of the program's own code — `module:function`, never line numbers, with
 *   recursion collapsed and generated names normalized. The frames outweigh the message: it only
 *   counts when the stack is weak (no in-app frame, or only top-level code such as `<module>` or
 *   `main`, where every failure of a script would otherwise look alike).
 * - **diag** (compiler, linker, panic): tool, code (`E0308`, `TS2304`, `-Werror=…`), the file's
 *   basename and the normalized message — never the line and column.
 * - **text**: the normalized telling line.
 *
 * Messages are normalized by normalize.ts and cut to 160 characters after masking (so a long
 * volatile part before the cut cannot move it). The result is `v2:` + the first 16 hex digits of
 * SHA-256 over the length-prefixed fields; the version keeps stored groups from silently
 * regrouping when the algorithm changes (v1 stays in fingerprint.ts for `rules: reference`).
 */
import * as crypto from 'node:crypto';
import type { FailureKey } from './finding.ts';
import { normalizeMessage } from './normalize.ts';

export const FINGERPRINT_V2 = 'v2';
/** Longest normalized message that counts, in UTF-16 code units. */
const MESSAGE_MAX = 160;
/** Longest raw text handed to normalization (a 1 MB line is identified by its start). */
const RAW_MAX = 2048;

// Node ≥ 20.12 has the one-shot `crypto.hash` (≈3× faster than createHash for short input).
const oneShot = (crypto as unknown as { hash?: (alg: string, data: string, enc: 'hex') => string }).hash;

function sha256Hex(input: string): string {
  return oneShot ? oneShot('sha256', input, 'hex') : crypto.createHash('sha256').update(input).digest('hex');
}

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
      return ['stack', key.types.join(' > '), key.frames.join(' | '), key.weak ? fingerprintMessage(firstLine(key.message)) : ''];
    case 'diag':
      return ['diag', key.tool, key.code, key.file.toLowerCase(), fingerprintMessage(key.message)];
    case 'text':
      return ['text', fingerprintMessage(key.text)];
  }
}

/** `v2:` + 16 hex digits of SHA-256 over the length-prefixed fields of the key. */
export function fingerprintV2(key: FailureKey): string {
  const fields = fingerprintFields(key);
  let input = FINGERPRINT_V2;
  for (let i = 0; i < fields.length; i++) input += '\n' + fields[i]!.length + ':' + fields[i];
  return FINGERPRINT_V2 + ':' + sha256Hex(input).slice(0, 16);
}

function firstLine(text: string): string {
  const nl = text.indexOf('\n');
  return nl < 0 ? text : text.slice(0, nl);
}
