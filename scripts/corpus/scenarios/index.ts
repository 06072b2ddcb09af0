/** Every scenario of the corpus, in the order the generator runs them. */
import type { Scenario } from '../scenario.ts';
import { secondBatch } from './second-batch.ts';
import { jvm } from './jvm.ts';
import { native } from './native.ts';
import { nodeScenarios } from './node.ts';
import { python } from './python.ts';
import { round2 } from './round2.ts';
import { rust } from './rust.ts';
import { shell } from './shell.ts';
import { git, make, npm, perl, tsc } from './tools.ts';

export const scenarios: Scenario[] = [
  ...python,
  ...nodeScenarios,
  ...jvm,
  ...native,
  ...rust,
  ...shell,
  ...git,
  ...npm,
  ...make,
  ...perl,
  ...tsc,
  ...secondBatch,
  ...round2,
];
