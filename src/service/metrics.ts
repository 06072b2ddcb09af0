/**
 * vigil's own metrics in the Prometheus text exposition format (version 0.0.4): read from the
 * components' counters at scrape time, so nothing is kept twice and a scrape costs one store
 * status read.
 */
import type { Lifecycle } from '../component.ts';
import type { HistogramSnapshot } from '../internal/histogram.ts';

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface Sample {
  labels: Record<string, string>;
  value: number;
  /** A histogram's series: `_bucket` (with its `le` label), `_sum` or `_count`. */
  suffix?: '_bucket' | '_sum' | '_count';
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

/** A histogram's samples under `labels`: a cumulative bucket per bound and +Inf, then the sum and the count. */
export function histogramSamples(labels: Record<string, string>, h: HistogramSnapshot): Sample[] {
  const buckets: Sample[] = h.bounds.map((le, i) => ({ labels: { ...labels, le: String(le) }, value: h.cumulative[i]!, suffix: '_bucket' }));
  return [
    ...buckets,
    { labels: { ...labels, le: '+Inf' }, value: h.count, suffix: '_bucket' },
    { labels, value: h.sum, suffix: '_sum' },
    { labels, value: h.count, suffix: '_count' },
  ];
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
      lines.push(`${f.name}${s.suffix ?? ''}${l} ${formatValue(s.value)}`);
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
      const labels = { [kind]: id, ...m.labels };
      if (m.type === 'histogram') f.samples.push(...histogramSamples(labels, m.histogram));
      else f.samples.push({ labels, value: m.value });
    }
  }
  return [...families.values()];
}
