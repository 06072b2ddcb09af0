/**
 * Writes test/fixtures/fingerprints.jsonl: for every failure of the corpus (both parts), its text and
 * the fingerprint the vigil rules give it now. test/fingerprint-stability.test.ts then holds every
 * later change to those fingerprints — or to a new algorithm version. Run it when the version is
 * bumped (and only then):
 *
 *   node --import tsx scripts/corpus/pin-fingerprints.ts
 */
import { writeFileSync } from 'node:fs';
import { classifyLine, type ClassifiedLine } from '../../src/processors/classify/classify.ts';
import { corpusParts } from '../eval-classify.ts';

const out: string[] = [];
for (const part of corpusParts()) {
  for (const c of part.cases) {
    const r = classifyLine(JSON.stringify({ text: c.text, exit_code: c.exit_code }), 1, 'vigil') as ClassifiedLine;
    if (r.fingerprint === null) continue;
    out.push(JSON.stringify({ id: `${part.name}/${c.id}`, text: c.text, exit_code: c.exit_code, fingerprint: r.fingerprint }));
  }
}
const path = new URL('../../test/fixtures/fingerprints.jsonl', import.meta.url);
writeFileSync(path, out.join('\n') + '\n');
process.stderr.write(`pinned ${out.length} fingerprints in ${path.pathname}\n`);
