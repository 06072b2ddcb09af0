import type { ProcessorFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { errorMessage } from '../../errors.ts';
import { CLASSIFY_RULES, type ClassifyRules } from './classify.ts';
import { classify } from './operator.ts';

/** Rule set used when the config names none. */
export const DEFAULT_CLASSIFY_RULES: ClassifyRules = 'vigil';

const schema = s.object({
  /**
   * `vigil` (default): the detection engine for the formats agents meet (Python, Node.js, JVM,
   * Rust, Go, C/C++, shells, npm, git, make, perl, tsc), OpenTelemetry evidence and the
   * stack-aware fingerprint v3. `reference`: DESIGN 3.1's rules exactly with fingerprint v1, the
   * baseline.
   */
  rules: s.enumOf(CLASSIFY_RULES).default(DEFAULT_CLASSIFY_RULES),
});

export type ClassifyConfig = Infer<typeof schema>;

export const classifyFactory: ProcessorFactory<ClassifyConfig> = {
  type: 'classify',
  schema,
  signals: ['traces', 'logs'],
  create(settings, cfg) {
    const rules: ClassifyRules = cfg.rules === 'reference' ? 'reference' : 'vigil';
    return classify(
      { rules },
      {
        onItemError: (err, item, page) =>
          settings.logger.warn('classify: item could not be diagnosed; marked Uncertain', {
            pipeline: page.pipeline,
            partition: page.partition,
            entry: item.entry?.id,
            error: errorMessage(err),
          }),
      },
    );
  },
};
