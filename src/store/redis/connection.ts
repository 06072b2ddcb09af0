/**
 * The Redis connection of the store: one ioredis client (single node) or Cluster client, kept
 * connecting with backoff for as long as the store is open. While it is not ready every command
 * fails at once (no offline queue), which the store turns into a transient
 * VIGIL_STORE_UNAVAILABLE: receivers answer 503 and clients retry, instead of requests hanging
 * on a queue that a crash would lose. Logs name the server by its URL with the credentials masked.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { backoffDelay } from '../../internal/backoff.ts';
import { redactUrl } from '../../internal/redact.ts';
import type { Logger } from '../../logger.ts';

export interface ConnectionConfig {
  url: string;
  cluster: { enabled: boolean; nodes: string[] };
  connect_timeout: number;
  command_timeout: number;
}

export type RedisClient = Redis | Cluster;

/** Reconnect delays: 100 ms doubling to 5 s, jittered so sidecars do not reconnect in lockstep. */
const retryDelay = (times: number) => backoffDelay({ initial: 100, max: 5000 }, times);

function nodeOptions(url: string): { node: { host: string; port: number }; options: RedisOptions } {
  const u = new URL(url);
  const options: RedisOptions = {};
  if (u.username) options.username = decodeURIComponent(u.username);
  if (u.password) options.password = decodeURIComponent(u.password);
  if (u.protocol === 'rediss:') options.tls = { servername: u.hostname };
  const db = u.pathname.replace(/^\//, '');
  if (db) options.db = Number(db);
  return { node: { host: u.hostname || '127.0.0.1', port: Number(u.port || 6379) }, options };
}

/** What ioredis itself requires of a single node's socket before it writes a command to it. */
function socketWritable(client: RedisClient): boolean {
  if (client instanceof Cluster) return true; // each node's client checks its own socket
  const stream = client.stream as (NodeJS.WritableStream & { _writableState?: { ended?: boolean } }) | undefined;
  return !!stream && stream.writable && stream._writableState?.ended !== true;
}

export class RedisConnection {
  readonly client: RedisClient;
  readonly where: string;
  private ready = false;
  private closed = false;
  private downSince: number | undefined;
  private readyWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];

  /** `scripts`: names of the store's Lua commands (see the autopipelining note below). */
  constructor(
    readonly cfg: ConnectionConfig,
    scripts: string[],
    private readonly logger?: Logger,
  ) {
    this.where = [cfg.url, ...cfg.cluster.nodes].map((u) => redactUrl(u, { keepUser: true })).join(', ');
    const { node, options } = nodeOptions(cfg.url);
    const common = {
      connectTimeout: cfg.connect_timeout,
      commandTimeout: cfg.command_timeout,
      // A command in flight when the connection drops fails instead of being re-sent: every
      // write is idempotent or checked (dedupe, cursor and version checks), and failing fast
      // lets the receiver answer 503 while the client still waits.
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
    } satisfies RedisOptions;
    if (cfg.cluster.enabled) {
      const seeds = [node, ...cfg.cluster.nodes.map((u) => nodeOptions(u).node)];
      this.client = new Cluster(seeds, {
        lazyConnect: true,
        enableOfflineQueue: false,
        enableAutoPipelining: true,
        // Auto-pipelining groups a command by its first argument when it does not know the
        // command; for a script that is the key count, not a key, so scripts are sent on their
        // own (still concurrently, routed by their keys).
        autoPipeliningIgnoredCommands: scripts,
        clusterRetryStrategy: (times) => retryDelay(times),
        slotsRefreshTimeout: cfg.connect_timeout,
        redisOptions: { ...options, ...common, db: undefined },
      });
    } else {
      this.client = new Redis({
        ...options,
        ...node,
        ...common,
        lazyConnect: true,
        enableOfflineQueue: false,
        enableAutoPipelining: true,
        autoPipeliningIgnoredCommands: scripts,
        retryStrategy: (times) => retryDelay(times),
      });
    }
    this.client.on('ready', () => this.onReady());
    this.client.on('error', (err: Error) => this.onDown(err));
    this.client.on('close', () => this.onDown());
    this.client.on('end', () => this.onDown());
  }

  /**
   * Connected and able to take commands now. The client's own status is checked too: its 'close'
   * event can come after a command already failed on a dead socket, and a flag alone would then
   * still say ready while the client reconnects. The socket is checked as ioredis checks it
   * before it sends (a socket the server has ended can still show status 'ready' for a moment, and
   * a command sent then fails with "Stream isn't writeable").
   */
  get isReady(): boolean {
    return this.ready && this.client.status === 'ready' && socketWritable(this.client);
  }

  /** Starts connecting; resolves after the first attempt, connected or not (retries go on). */
  async start(): Promise<void> {
    const first = new Promise<void>((resolve) => {
      const done = () => {
        this.client.off('ready', done);
        this.client.off('error', done);
        resolve();
      };
      this.client.once('ready', done);
      this.client.once('error', done);
    });
    this.client.connect().catch(() => undefined);
    await first;
  }

  /** Resolves when connected; rejects when closed first. */
  whenReady(): Promise<void> {
    if (this.ready) return Promise.resolve();
    if (this.closed) return Promise.reject(new Error('redis connection closed'));
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
  }

  private onReady(): void {
    this.ready = true;
    if (this.downSince !== undefined) {
      this.logger?.info('redis reachable again', { redis: this.where, down_ms: Date.now() - this.downSince });
    } else {
      this.logger?.debug('redis connected', { redis: this.where });
    }
    this.downSince = undefined;
    const waiters = this.readyWaiters;
    this.readyWaiters = [];
    for (const w of waiters) w.resolve();
  }

  private onDown(err?: Error): void {
    this.ready = false;
    if (this.closed) return;
    // One message per outage, not one per reconnect attempt.
    if (this.downSince === undefined && err) {
      this.downSince = Date.now();
      this.logger?.error(`redis at ${this.where} is unreachable (${err.message}); retrying with backoff, ingest answers retryably meanwhile`, {
        redis: this.where,
      });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ready = false;
    const waiters = this.readyWaiters;
    this.readyWaiters = [];
    for (const w of waiters) w.reject(new Error('redis connection closed'));
    try {
      if (this.client.status === 'ready') await this.client.quit();
      else this.client.disconnect();
    } catch {
      this.client.disconnect();
    }
  }
}
