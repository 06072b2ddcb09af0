/** Secrets out of what is logged or shown: URLs with credentials, error texts that quote them. */

/**
 * A URL fit for logs: the credentials become `***` and the query string (tokens travel there too)
 * becomes `?…`; scheme, host, port and path stay so the operator can tell which server. With
 * `keepUser` an ACL user name stays beside a password (`redis://vigil:***@…`), for servers whose
 * user names are not secrets; a user name alone is always masked (it is often a token).
 */
export function redactUrl(url: string, opts: { keepUser?: boolean } = {}): string {
  try {
    const u = new URL(url);
    const auth = !u.username && !u.password ? '' : opts.keepUser && u.username && u.password ? `${u.username}:***@` : '***@';
    return `${u.protocol}//${auth}${u.host}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    // Not a URL, but it may still carry `user:password@`.
    return url.replace(/\/\/[^@/]*@/, '//***@').replace(/\?.*$/, '?…');
  }
}

/** `text` with every occurrence of each secret (raw URLs, tokens) replaced by its redacted form or `***`. */
export function redactText(text: string, secrets: ReadonlyArray<string | { secret: string; shownAs: string }>): string {
  let out = text;
  for (const s of secrets) {
    const [secret, shownAs] = typeof s === 'string' ? [s, '***'] : [s.secret, s.shownAs];
    if (secret) out = out.split(secret).join(shownAs);
  }
  return out;
}
