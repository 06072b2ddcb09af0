/** A URL fit for logs: no user name or password, no query string (tokens travel there too). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    const auth = u.username || u.password ? '***@' : '';
    return `${u.protocol}//${auth}${u.host}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    return '<invalid url>';
  }
}
