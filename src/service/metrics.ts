/**
 * vigil's own metrics in the Prometheus text exposition format (version 0.0.4): read from the
 * components' counters at scrape time, so nothing is kept twice and a scrape costs one store
 * status read.
 */
import type { Lifecycle } from '../component.ts';

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
 * Families from components' own metrics (`Lifecycle.metrics()`), each sample labelled with its
 * component's id (`receiver="otlp"`); a family's type and HELP come from its samples.
 */
export function componentFamilies(kind: string, components: ReadonlyMap<string, Pick<Lifecycle, 'metrics'>>): MetricFamily[] {
  const families = new Map<string, MetricFamily>();
  for (const [id, component] of components) {
    for (const m of component.metrics?.() ?? []) {
      let f = families.get(m.name);
      if (!f) families.set(m.name, (f = family(m.name, m.type, m.help)));
      f.samples.push({ labels: { [kind]: id, ...m.labels }, value: m.value });
    }
  }
  return [...families.values()];
}
