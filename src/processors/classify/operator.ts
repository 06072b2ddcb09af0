/**
 * The classify processor: sets a diagnosis on every item of a page. A pure `map` (no state, no
 * I/O, no time), so it keeps the order, the timing and the completion of its input. An item whose
 * diagnosis throws is diagnosed `Uncertain` without a signature (so it never becomes an
 * occurrence), reported to `onItemError`, and the page goes on.
 */
import { map, type OperatorFunction } from 'rxjs';
import type { Diagnosis } from '../../model/event.ts';
import { withDiagnosis, type PageItem, type WorkPage } from '../page.ts';
import { diagnose, type ClassifyRules } from './classify.ts';

export interface ClassifyOptions {
  /** `reference`: DESIGN 3.1 exactly; `vigil`: the reference plus vigil's extensions. */
  rules: ClassifyRules;
}

export interface ClassifyHooks {
  /** Called for each item whose diagnosis threw; the item is diagnosed Uncertain. */
  onItemError?(error: unknown, item: PageItem, page: WorkPage): void;
}

/** Diagnosis of an item that could not be diagnosed. */
export const UNDIAGNOSABLE: Readonly<Diagnosis> = Object.freeze({ classification: 'Uncertain', signature: null, fingerprint: null });

/** Returns new page and item objects; the input page and its items are left untouched. */
export function classify(opts: ClassifyOptions, hooks: ClassifyHooks = {}): OperatorFunction<WorkPage, WorkPage> {
  // A timer page (no items) passes through as it is.
  return map((page) =>
    page.items.length === 0
      ? page
      : {
          ...page,
          items: page.items.map((item) => withDiagnosis(item, diagnoseItem(item, page, opts.rules, hooks))),
        },
  );
}

function diagnoseItem(item: PageItem, page: WorkPage, rules: ClassifyRules, hooks: ClassifyHooks): Diagnosis {
  try {
    return diagnose(item.entry.event, rules);
  } catch (err) {
    try {
      hooks.onItemError?.(err, item, page);
    } catch {
      // A failing hook must not fail the page either.
    }
    return { ...UNDIAGNOSABLE };
  }
}
