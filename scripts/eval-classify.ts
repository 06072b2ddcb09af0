/**
 * Evaluates the classify rule sets on the labelled corpus (test/corpus/cases.jsonl, built by
 * scripts/corpus/generate.ts from real tool runs): class accuracy, signature exact-match rate and
 * grouping quality — pairwise precision, recall and F1 of "same fingerprint" against "same
 * failure" over the cases labelled as failures — for `vigil` and `reference` side by side, then
 * the cases vigil gets wrong.
 *
 *   npm run eval:classify               # table and vigil's misses
 *   npm run eval:classify -- --json     # the figures as JSON
 *   npm run eval:classify -- --misses=reference
 *   npm run eval:classify -- --corpus=other.jsonl
 */
import { readFileSync } from 'node:fs';
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

export const CORPUS_PATH = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'test/corpus/cases.jsonl');

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
  let sigOk = 0;
  let failures = 0;
  let noSigOk = 0;
  const fps: Array<{ fp: string; failure: string }> = [];
  cases.forEach((c, n) => {
    const out = classifyLine(JSON.stringify({ text: c.text, exit_code: c.exit_code }), n + 1, rules);
    if ('error' in out) throw new Error(`${c.id}: ${out.error}`);
    const r = out as ClassifiedLine;
    if (r.classification === c.expected.classification) classOk++;
    else misses.push({ id: c.id, what: 'class', expected: c.expected.classification, actual: r.classification });
    if (c.expected.signature !== null) failures++;
    if (r.signature === c.expected.signature) {
      if (c.expected.signature !== null) sigOk++;
      else noSigOk++;
    } else misses.push({ id: c.id, what: 'signature', expected: c.expected.signature, actual: r.signature });
    if (c.expected.failure_id !== null) {
      // A failure that got no fingerprint stands alone.
      fps.push({ fp: r.fingerprint ?? `none:${c.id}`, failure: c.expected.failure_id });
    }
  });
  let truePairs = 0;
  let predictedPairs = 0;
  let correctPairs = 0;
  for (let i = 0; i < fps.length; i++) {
    for (let j = i + 1; j < fps.length; j++) {
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
    signatureAccuracy: failures === 0 ? 1 : sigOk / failures,
    noSignatureAccuracy: cases.length === failures ? 1 : noSigOk / (cases.length - failures),
    failureCases: fps.length,
    pairwise: { precision, recall, f1, truePairs, predictedPairs, correctPairs },
    groups: { fingerprints: new Set(fps.map((f) => f.fp)).size, failures: new Set(fps.map((f) => f.failure)).size },
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
    const fp = out.fingerprint ?? `none:${c.id}`;
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

function main(): void {
  const args = process.argv.slice(2);
  const corpusArg = args.find((a) => a.startsWith('--corpus='));
  const cases = loadCorpus(corpusArg ? corpusArg.slice(9) : CORPUS_PATH);
  const results = CLASSIFY_RULES.map((r) => evaluate(cases, r));
  if (args.includes('--json')) {
    process.stdout.write(JSON.stringify(results.map(({ misses, ...r }) => ({ ...r, misses: misses.length })), null, 2) + '\n');
    return;
  }
  const failures = cases.filter((c) => c.expected.failure_id !== null);
  process.stdout.write(`corpus: ${cases.length} cases from real runs of ${new Set(cases.map((c) => c.tool)).size} tools; ${failures.length} failures of ${new Set(failures.map((c) => c.expected.failure_id)).size} distinct kinds\n\n`);
  const rows: Array<[string, (e: Evaluation) => string]> = [
    ['class accuracy', (e) => pct(e.classAccuracy)],
    ['signature exact match', (e) => pct(e.signatureAccuracy)],
    ['no name for non-failures', (e) => pct(e.noSignatureAccuracy)],
    ['pairwise precision', (e) => e.pairwise.precision.toFixed(3)],
    ['pairwise recall', (e) => e.pairwise.recall.toFixed(3)],
    ['pairwise F1', (e) => e.pairwise.f1.toFixed(3)],
    ['fingerprints / failures', (e) => `${e.groups.fingerprints} / ${e.groups.failures}`],
  ];
  const w = 26;
  process.stdout.write(`| ${'metric'.padEnd(w)} | ${results.map((r) => r.rules.padEnd(10)).join(' | ')} |\n`);
  process.stdout.write(`| ${'-'.repeat(w)} | ${results.map(() => '-'.repeat(10)).join(' | ')} |\n`);
  for (const [name, f] of rows) process.stdout.write(`| ${name.padEnd(w)} | ${results.map((r) => f(r).padEnd(10)).join(' | ')} |\n`);
  const which = (args.find((a) => a.startsWith('--misses='))?.slice(9) ?? 'vigil') as ClassifyRules;
  const chosen = results.find((r) => r.rules === which) ?? results[0]!;
  process.stdout.write(`\n${chosen.rules} misses (${chosen.misses.length}):\n`);
  for (const m of chosen.misses) process.stdout.write(`  ${m.id} [${m.what}] expected ${JSON.stringify(m.expected)} got ${JSON.stringify(m.actual)}\n`);
  const g = groupingErrors(cases, chosen.rules);
  process.stdout.write(`\n${chosen.rules} grouping: ${g.merged.length} fingerprints merge different failures, ${g.split.length} failures are split\n`);
  for (const m of g.merged) process.stdout.write(`  merged: ${m.join(', ')}\n`);
  for (const s of g.split) process.stdout.write(`  split: ${s}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
