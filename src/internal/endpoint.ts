/** `host:port` endpoints: parsing, formatting, and whether an address is reachable only locally. */
import { isIP } from 'node:net';

export interface HostPort {
  host: string;
  port: number;
}

/**
 * `host:port`, `[v6]:port`, `:port`; a missing host is 127.0.0.1, never all interfaces by
 * accident. Undefined for anything else.
 */
export function parseEndpoint(value: string): HostPort | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]*)):(\d{1,5})$/.exec(value.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  const host = m[1] ?? (m[2] || '127.0.0.1');
  return { host, port };
}

/** `host:port`, with an IPv6 host in brackets. */
export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Whether binding `host` exposes a port only to this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (h.startsWith('::ffff:')) return h.slice(7).startsWith('127.');
  return false;
}
