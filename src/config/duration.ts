/** Go-style durations as the Collector writes them: `60s`, `500ms`, `1m30s`, `2h`, `1.5s`. */
const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)/y;

export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (t === '0') return 0;
  if (t === '') return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < t.length) {
    const start = PART.lastIndex;
    const m = PART.exec(t);
    if (!m || m.index !== start) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  return Math.round(total);
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
