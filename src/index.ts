/**
 * The package's module entry (`import … from 'vigil'`): the parts of vigil that are a contract
 * (README "As a library"). The command line is the main way to use vigil; everything not exported
 * here is internal and may change without notice.
 */
export { main } from './cli/main.ts';
export { CLASSIFY_RULES, classifyLine } from './processors/classify/classify.ts';
export type { ClassifiedLine, ClassifyLineResult, ClassifyRules, MalformedLine } from './processors/classify/classify.ts';
export { CLASSIFICATIONS } from './model/event.ts';
export type { Classification } from './model/event.ts';
export type { Decision, ProviderEventData, WorkEvent, WorkEventData, WorkEventType } from './model/work.ts';
export { ERROR_CODES, VigilError, isVigilError } from './errors.ts';
export type { VigilErrorCode } from './errors.ts';
