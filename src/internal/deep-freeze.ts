/**
 * Freezes a value and everything it holds, in place: what a store keeps is shared with readers
 * (no copy per read), so it must not change under them. Already frozen parts are not walked again.
 */
export function deepFreeze<T>(value: T): T {
  // Binary views cannot be frozen (and the durable stores keep JSON only).
  if (typeof value !== 'object' || value === null || Object.isFrozen(value) || ArrayBuffer.isView(value)) return value;
  Object.freeze(value);
  // Primitives (most of an event's values) are not visited. Walked by key rather than with
  // `Object.values`, which builds an array per object (a work event holds four objects).
  for (const key in value) {
    const v: unknown = value[key];
    // Own properties only, as `Object.values` (plain data inherits none that are enumerable).
    if (typeof v === 'object' && v !== null && Object.hasOwn(value, key)) deepFreeze(v);
  }
  return value;
}
