/**
 * Redis key layout. Two kinds of hash tag decide which keys share a Redis Cluster slot:
 *
 * - `{<pipeline>:<partition>}`: one partition's ingest log (a Stream), its cursor and its dedupe
 *   set. The ingest path touches only these, so appends spread over the cluster by session.
 * - `{state}`: everything a page commit writes besides the cursor — group states, turn counters,
 *   revisions, the per-pipeline outbox and exporter cursors, recent failures, the partition
 *   registry and (cluster mode) the per-partition commit high-water marks. Sharing one slot is what lets one Lua
 *   script commit a page atomically even in a cluster (see store.ts for why this beats per-group
 *   slots).
 *
 * Braces and `%` in partition names are percent-encoded so that a session id cannot end the hash
 * tag early or make two partitions' keys collide.
 */
export interface KeySpace {
  prefix: string;
  partition(pipeline: string, partition: string): PartitionKeys;
  state: StateKeys;
  turn(pipeline: string, turnId: string): string;
  revision(executionId: string): string;
  outbox(pipeline: string): string;
  outboxSeq(pipeline: string): string;
  exporterCursors(pipeline: string): string;
  partitions(pipeline: string): string;
  deadLetters(pipeline: string, exporter: string): string;
  /** Cluster mode: how far a partition was committed, kept in the state slot (see store.ts). */
  highWater(pipeline: string, partition: string): string;
  /** A processor-state namespace: entries, keys by write order, expiring keys by expiry. */
  kv(namespace: string): { hash: string; order: string; exp: string };
  /** A pipeline's durable timers: id → timer, and ids by due time. */
  timers(pipeline: string): { hash: string; due: string };
}

export interface PartitionKeys {
  log: string;
  cursor: string;
  seen: string;
}

export interface StateKeys {
  pipelines: string;
  groups: string;
  versions: string;
  open: string;
  recent: string;
  deadKeys: string;
  /** Names of the processor-state namespaces. */
  kvNamespaces: string;
  /** Write and timer sequences, eviction counts per namespace. */
  kvMeta: string;
}

function encodePartition(p: string): string {
  return p.replace(/[%{}]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

export function keySpace(prefix: string): KeySpace {
  const s = `${prefix}{state}:`;
  return {
    prefix,
    partition(pipeline, partition) {
      const tag = `${prefix}{${pipeline}:${encodePartition(partition)}}:`;
      return { log: tag + 'log', cursor: tag + 'cursor', seen: tag + 'seen' };
    },
    state: {
      pipelines: s + 'pipelines',
      groups: s + 'groups',
      versions: s + 'group-versions',
      open: s + 'open-work',
      recent: s + 'recent-failures',
      deadKeys: s + 'dead-letter-lists',
      kvNamespaces: s + 'kv-namespaces',
      kvMeta: s + 'kv-meta',
    },
    turn: (pipeline, turnId) => `${s}turn:${pipeline}:${turnId}`,
    revision: (executionId) => `${s}revision:${executionId}`,
    outbox: (pipeline) => `${s}outbox:${pipeline}`,
    outboxSeq: (pipeline) => `${s}outbox-seq:${pipeline}`,
    exporterCursors: (pipeline) => `${s}exporter-cursors:${pipeline}`,
    partitions: (pipeline) => `${s}partitions:${pipeline}`,
    deadLetters: (pipeline, exporter) => `${s}dead:${pipeline}:${exporter}`,
    highWater: (pipeline, partition) => `${s}high-water:${pipeline}:${encodePartition(partition)}`,
    // Namespaces have no braces (NAMESPACE_PATTERN), so they cannot end the hash tag.
    kv: (namespace) => ({ hash: `${s}kv:${namespace}`, order: `${s}kv-order:${namespace}`, exp: `${s}kv-exp:${namespace}` }),
    timers: (pipeline) => ({ hash: `${s}timers:${pipeline}`, due: `${s}timer-due:${pipeline}` }),
  };
}
