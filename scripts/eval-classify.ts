/**
 * Evaluates the classify rule sets on the labelled corpus: class accuracy (overall and on exit-0
 * outputs), signature exact-match rate and grouping quality — pairwise precision, recall and F1 of
 * "same fingerprint" against "same failure" over the cases labelled as failures — for `vigil` and
 * `reference` side by side, on the whole corpus and on each part: ours (test/corpus/cases.jsonl,
 * scripts/corpus/generate.ts) and the held-out part written by someone who had not read the rules
 * (test/corpus/heldout.jsonl, scripts/corpus/heldout/). Then the cases a rule set gets wrong.
 *
 *   npm run eval:classify                       # tables and vigil's misses on the whole corpus
 *   npm run eval:classify -- --json             # the figures as JSON
 *   npm run eval:classify -- --misses=reference --part=held-out
 *   npm run eval:classify -- --corpus=other.jsonl   # one file only
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLASSIFY_RULES, classifyLine, type ClassifiedLine, type ClassifyRules } from '../src/processors/classify/classify.ts';

export interface CorpusCase {
  id: string;
  tool: string;
  program: string;
  text: string;
  exit_code: number;
  expected: { classification: string; signature: string | null; failure_id: string | null };
  /** The part of the corpus a case comes from: grouping pairs are only counted within a part. */
  part?: string;
}

export interface Miss {
  id: string;
  what: 'class' | 'signature';
  expected: string | null;
  actual: string | null;
}

export interface Evaluation {
  rules: ClassifyRules;
  cases: number;
  classAccuracy: number;
  /** Over the cases of successful runs (exit code 0): RecoveredError, StderrWarning, Uncertain, NormalOutput. */
  exit0: { cases: number; classAccuracy: number };
  /** Over the cases labelled as failures (ExecutionFailure, RecoveredError): the name is exactly the label. */
  signatureAccuracy: number;
  /** Over the other cases: no signature given (a name for a warning or noise is a miss). */
  noSignatureAccuracy: number;
  /** Failure cases (with a failure_id) over which grouping is measured. */
  failureCases: number;
  pairwise: { precision: number; recall: number; f1: number; truePairs: number; predictedPairs: number; correctPairs: number };
  /** Distinct fingerprints among the failure cases, and distinct failure ids. */
  groups: { fingerprints: number; failures: number };
  misses: Miss[];
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const CORPUS_PATH = join(ROOT, 'test/corpus/cases.jsonl');
/** The held-out part: cases written from real tools by someone who had not read the rules. */
export const HELDOUT_PATH = join(ROOT, 'test/corpus/heldout.jsonl');
/** A second held-out batch, by another outsider, after the rules had been tuned on the first. */
export const HELDOUT2_PATH = join(ROOT, 'test/corpus/heldout2.jsonl');

/** The parts of the corpus that exist, by name. */
export function corpusParts(): Array<{ name: string; cases: CorpusCase[] }> {
  const parts = [{ name: 'ours', cases: loadCorpus(CORPUS_PATH) }];
  if (existsSync(HELDOUT_PATH)) parts.push({ name: 'held-out', cases: loadCorpus(HELDOUT_PATH) });
  if (existsSync(HELDOUT2_PATH)) parts.push({ name: 'held-out 2', cases: loadCorpus(HELDOUT2_PATH) });
  return parts;
}

export function loadCorpus(path = CORPUS_PATH): CorpusCase[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as CorpusCase);
}

/** Runs one rule set over the corpus through `classifyLine`, exactly as `vigil classify` would. */
export function evaluate(cases: readonly CorpusCase[], rules: ClassifyRules): Evaluation {
  const misses: Miss[] = [];
  let classOk = 0;
  let exit0 = 0;
  let exit0Ok = 0;
  let sigOk = 0;
  let failures = 0;
  let noSigOk = 0;
  const fps: Array<{ fp: string; failure: string; part: string }> = [];
  cases.forEach((c, n) => {
    const out = classifyLine(JSON.stringify({ text: c.text, exit_code: c.exit_code }), n + 1, rules);
    if ('error' in out) throw new Error(`${c.id}: ${out.error}`);
    const r = out as ClassifiedLine;
    if (c.exit_code === 0) exit0++;
    if (r.classification === c.expected.classification) {
      classOk++;
      if (c.exit_code === 0) exit0Ok++;
    } else misses.push({ id: c.id, what: 'class', expected: c.expected.classification, actual: r.classification });
    if (c.expected.signature !== null) failures++;
    if (r.signature === c.expected.signature) {
      if (c.expected.signature !== null) sigOk++;
      else noSigOk++;
    } else misses.push({ id: c.id, what: 'signature', expected: c.expected.signature, actual: r.signature });
    if (c.expected.failure_id !== null) {
      // A failure that got no fingerprint stands alone.
      fps.push({ fp: r.fingerprint ?? `none:${c.id}`, failure: c.expected.failure_id, part: c.part ?? '' });
    }
  });
  let truePairs = 0;
  let predictedPairs = 0;
  let correctPairs = 0;
  for (let i = 0; i < fps.length; i++) {
    for (let j = i + 1; j < fps.length; j++) {
      // Two authors' failure ids say nothing about each other's cases.
      if (fps[i]!.part !== fps[j]!.part) continue;
      const same = fps[i]!.failure === fps[j]!.failure;
      const grouped = fps[i]!.fp === fps[j]!.fp;
      if (same) truePairs++;
      if (grouped) predictedPairs++;
      if (same && grouped) correctPairs++;
    }
  }
  const precision = predictedPairs === 0 ? 1 : correctPairs / predictedPairs;
  const recall = truePairs === 0 ? 1 : correctPairs / truePairs;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return {
    rules,
    cases: cases.length,
    classAccuracy: classOk / cases.length,
    exit0: { cases: exit0, classAccuracy: exit0 === 0 ? 1 : exit0Ok / exit0 },
    signatureAccuracy: failures === 0 ? 1 : sigOk / failures,
    noSignatureAccuracy: cases.length === failures ? 1 : noSigOk / (cases.length - failures),
    failureCases: fps.length,
    pairwise: { precision, recall, f1, truePairs, predictedPairs, correctPairs },
    groups: { fingerprints: new Set(fps.map((f) => `${f.part}\u0000${f.fp}`)).size, failures: new Set(fps.map((f) => f.failure)).size },
    misses,
  };
}

/** Which fingerprints merge different failures, and which failures are split over fingerprints. */
export function groupingErrors(cases: readonly CorpusCase[], rules: ClassifyRules): { merged: string[][]; split: string[] } {
  const byFp = new Map<string, Set<string>>();
  const byFailure = new Map<string, Set<string>>();
  cases.forEach((c, n) => {
    if (c.expected.failure_id === null) return;
    const out = classifyLine(JSON.stringify({ text: c.text, exit_code: c.exit_code }), n + 1, rules) as ClassifiedLine;
    const fp = `${c.part ?? ''}\u0000${out.fingerprint ?? `none:${c.id}`}`;
    if (!byFp.has(fp)) byFp.set(fp, new Set());
    byFp.get(fp)!.add(c.expected.failure_id);
    if (!byFailure.has(c.expected.failure_id)) byFailure.set(c.expected.failure_id, new Set());
    byFailure.get(c.expected.failure_id)!.add(fp);
  });
  return {
    merged: [...byFp.values()].filter((s) => s.size > 1).map((s) => [...s]),
    split: [...byFailure.entries()].filter(([, s]) => s.size > 1).map(([f, s]) => `${f} (${s.size} fingerprints)`),
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

const ROWS: Array<[string, (e: Evaluation) => string]> = [
  ['class accuracy', (e) => pct(e.classAccuracy)],
  ['class accuracy, exit 0', (e) => pct(e.exit0.classAccuracy)],
  ['signature exact match', (e) => pct(e.signatureAccuracy)],
  ['no name for non-failures', (e) => pct(e.noSignatureAccuracy)],
  ['pairwise precision', (e) => e.pairwise.precision.toFixed(3)],
  ['pairwise recall', (e) => e.pairwise.recall.toFixed(3)],
  ['pairwise F1', (e) => e.pairwise.f1.toFixed(3)],
  ['fingerprints / failures', (e) => `${e.groups.fingerprints} / ${e.groups.failures}`],
];

/** One markdown table: a row per metric, a column per (part, rule set). */
function table(columns: Array<{ title: string; e: Evaluation }>): string {
  const w = 26;
  const cw = Math.max(10, ...columns.map((c) => c.title.length));
  let out = `| ${'metric'.padEnd(w)} | ${columns.map((c) => c.title.padEnd(cw)).join(' | ')} |\n`;
  out += `| ${'-'.repeat(w)} | ${columns.map(() => '-'.repeat(cw)).join(' | ')} |\n`;
  for (const [name, f] of ROWS) out += `| ${name.padEnd(w)} | ${columns.map((c) => f(c.e).padEnd(cw)).join(' | ')} |\n`;
  return out;
}

function describeCases(cases: readonly CorpusCase[]): string {
  const failures = cases.filter((c) => c.expected.failure_id !== null);
  const exit0 = cases.filter((c) => c.exit_code === 0).length;
  return `${cases.length} cases from real runs of ${new Set(cases.map((c) => c.tool)).size} tools; ${failures.length} failures of ${new Set(failures.map((c) => c.expected.failure_id)).size} distinct kinds; ${exit0} exit-0 outputs`;
}

function main(): void {
  const args = process.argv.slice(2);
  const corpusArg = args.find((a) => a.startsWith('--corpus='));
  const parts = corpusArg ? [{ name: corpusArg.slice(9), cases: loadCorpus(corpusArg.slice(9)) }] : corpusParts();
  // Failure ids are per part (each author names their own): the whole corpus pairs cases within a part only.
  const whole = parts.length > 1 ? [{ name: 'whole', cases: parts.flatMap((p) => p.cases.map((c) => withPart(c, p.name))) }] : [];
  const all = [...whole, ...parts].map((p) => ({ ...p, results: CLASSIFY_RULES.map((r) => evaluate(p.cases, r)) }));
  if (args.includes('--json')) {
    const json = all.map((p) => ({ part: p.name, results: p.results.map(({ misses, ...r }) => ({ ...r, misses: misses.length })) }));
    process.stdout.write(JSON.stringify(json, null, 2) + '\n');
    return;
  }
  for (const p of all) process.stdout.write(`${p.name}: ${describeCases(p.cases)}\n`);
  process.stdout.write('\n' + table(all.flatMap((p) => p.results.map((e) => ({ title: all.length > 1 ? `${p.name}: ${e.rules}` : e.rules, e })))));
  const which = (args.find((a) => a.startsWith('--misses='))?.slice(9) ?? 'vigil') as ClassifyRules;
  const partName = args.find((a) => a.startsWith('--part='))?.slice(7) ?? all[0]!.name;
  const part = all.find((p) => p.name === partName) ?? all[0]!;
  const chosen = part.results.find((r) => r.rules === which) ?? part.results[0]!;
  process.stdout.write(`\n${chosen.rules} misses on ${part.name} (${chosen.misses.length}):\n`);
  for (const m of chosen.misses) process.stdout.write(`  ${m.id} [${m.what}] expected ${JSON.stringify(m.expected)} got ${JSON.stringify(m.actual)}\n`);
  const g = groupingErrors(part.cases, chosen.rules);
  process.stdout.write(
    `\n${chosen.rules} grouping on ${part.name}: ${g.merged.length} fingerprints merge different failures, ${g.split.length} failures are split\n`,
  );
  for (const m of g.merged) process.stdout.write(`  merged: ${m.join(', ')}\n`);
  for (const s of g.split) process.stdout.write(`  split: ${s}\n`);
}

/** A case marked with its part, its ids prefixed with the part's name. */
function withPart(c: CorpusCase, part: string): CorpusCase {
  return { ...c, part, id: `${part}/${c.id}`, expected: { ...c.expected, failure_id: c.expected.failure_id === null ? null : `${part}/${c.expected.failure_id}` } };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
