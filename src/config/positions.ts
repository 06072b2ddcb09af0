/**
 * Maps a config key path (as schemas report it) back to a line and column in the YAML source, so
 * every problem can be shown as FILE:LINE:COL. Works on the parsed Document, which keeps offsets.
 */
import { isAlias, isMap, isScalar, isSeq } from 'yaml';
import type { Document, LineCounter, Node } from 'yaml';
import type { Path } from './schema.ts';

export interface Position {
  line: number;
  col: number;
}

/** The text of a mapping key as the loader sees it after `toJS()`. */
export function keyText(key: unknown): string {
  return isScalar(key) ? String(key.value) : String(key);
}

/**
 * The node a path points at: the key node when `atKey`, else the value node. When the path leaves
 * the document (a required key that is missing), the key naming the deepest existing ancestor is
 * used: `traces:` reads better as the culprit than the first key inside its mapping.
 */
export function nodeAt(doc: Document, path: Path, atKey = false): Node | undefined {
  let node: unknown = doc.contents;
  let keyNode: Node | undefined;
  for (const seg of path) {
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((p) => keyText(p.key) === String(seg));
      if (!pair) return keyNode ?? (node as Node);
      keyNode = pair.key as Node;
      node = pair.value;
    } else if (isSeq(node) && typeof seg === 'number' && seg < node.items.length) {
      node = node.items[seg];
      keyNode = node as Node;
    } else {
      return keyNode ?? (node as Node | undefined);
    }
  }
  if (atKey) return keyNode ?? (node as Node | undefined);
  // `classify:` has an empty null scalar positioned at the end of the line; point at the key.
  if (node == null || (isScalar(node) && node.value === null && node.source === '')) return keyNode;
  return node as Node;
}

export function positionOf(doc: Document, lineCounter: LineCounter, path: Path, atKey = false): Position {
  const offset = nodeAt(doc, path, atKey)?.range?.[0];
  return offset === undefined ? { line: 1, col: 1 } : lineCounter.linePos(offset);
}
