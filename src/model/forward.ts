/**
 * A received record kept for forwarding downstream: the OTLP data model as the receiver
 * normalized it (nanosecond times as strings, ids as hex), with its resource and scope, plus the
 * attributes vigil adds once the record has been diagnosed.
 */
import type { Attributes, NormalizedLog, NormalizedScope, NormalizedSpan } from './otlp.ts';

export type ForwardRecord =
  | { signal: 'traces'; resource: Attributes; scope: NormalizedScope; span: NormalizedSpan; enrichment?: Attributes }
  | { signal: 'logs'; resource: Attributes; scope: NormalizedScope; log: NormalizedLog; enrichment?: Attributes };

export type { Attributes };
