/**
 * vigil's own metrics in the Prometheus text exposition format (version 0.0.4): read from the
 * components' counters at scrape time, so nothing is kept twice and a scrape costs one store
 * status read.
 */
export type MetricType = 'counter' | 'gauge';

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

export function family(name: string, type: MetricType, help: string, samples: Sample[] = []): MetricFamily {
  return { name, type, help, samples };
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatValue(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return String(n);
}

export function renderMetrics(families: MetricFamily[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      const labels = Object.entries(s.labels);
      const l = labels.length ? `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}` : '';
      lines.push(`${f.name}${l} ${formatValue(s.value)}`);
    }
  }
  return lines.join('\n') + '\n';
}

/**
 * Counters of a component's `stats()` object as samples: numeric leaves become one sample each,
 * the path to them becomes labels named by `levels` (e.g. ['signal']) and the leaf name the `key`
 * label. A nested map named in `breakdowns` (e.g. `protocols` → label `protocol`) splits the
 * counters beside it: those become `<label>="total"`, its entries one series per member.
 * Non-numeric leaves are skipped.
 */
export function flattenStats(
  stats: unknown,
  levels: readonly string[],
  base: Record<string, string>,
  breakdowns: Record<string, string> = {},
): Sample[] {
  const out: Sample[] = [];
  const walk = (value: unknown, depth: number, labels: Record<string, string>) => {
    if (!value || typeof value !== 'object') return;
    const entries = Object.entries(value);
    const split = entries.find(([k, v]) => k in breakdowns && v && typeof v === 'object');
    const totalLabels = split ? { ...labels, [breakdowns[split[0]]!]: 'total' } : labels;
    for (const [k, v] of entries) {
      if (typeof v === 'number') out.push({ labels: { ...totalLabels, key: k }, value: v });
      else if (split && k === split[0]) {
        for (const [member, counts] of Object.entries(v as object)) walk(counts, levels.length, { ...labels, [breakdowns[k]!]: member });
      } else if (v && typeof v === 'object' && depth < levels.length) walk(v, depth + 1, { ...labels, [levels[depth]!]: k });
    }
  };
  walk(stats, 0, base);
  return out;
}
