/**
 * Bearer-token checks (RFC 6750 `Authorization: Bearer <token>`) for every endpoint that takes
 * them: the OTLP receivers (HTTP header, gRPC metadata) and the operator endpoints.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

export class BearerAuth {
  private readonly expected: Buffer[];

  /** `tokens`: the accepted tokens (none: every request passes). Empty strings are not tokens. */
  constructor(tokens: ReadonlyArray<string | undefined>) {
    this.expected = tokens.filter((t): t is string => typeof t === 'string' && t !== '').map(sha256);
  }

  /** Whether requests need a token at all. */
  get enabled(): boolean {
    return this.expected.length > 0;
  }

  /**
   * Whether an `Authorization` value carries an accepted token. Hashes are compared in constant
   * time, against every accepted token, so neither a token nor its length leaks through timing.
   */
  check(header: string | undefined): boolean {
    if (!this.enabled) return true;
    const m = BEARER.exec(header ?? '');
    const given = sha256(m ? m[1]! : '');
    let ok = false;
    for (const e of this.expected) ok = timingSafeEqual(given, e) || ok;
    return ok && m !== null;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * The auth of an operator endpoint (/status, /metrics): its own token when configured, else any
 * token the receivers require, else none. Protecting ingest thus also protects what operators see.
 */
export function operatorAuth(own: string | undefined, receiverTokens: readonly string[]): BearerAuth {
  return new BearerAuth(own !== undefined ? [own] : receiverTokens);
}
