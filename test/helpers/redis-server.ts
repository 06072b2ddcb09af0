/**
 * Private Redis servers for tests that need their own (persistence, restarts, faults, cluster):
 * real `redis-server` processes on free local ports in temp dirs, stopped by the tests. Tests that
 * only need a Redis use REDIS_URL (default redis://127.0.0.1:6379) with a unique key prefix.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { freePort, tempDir, waitFor } from './vigil-process.ts';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix no other test uses, so tests share the machine's Redis safely. */
export function uniquePrefix(name = 't'): string {
  return `vigil-test:${name}:${randomBytes(6).toString('hex')}:`;
}

export interface RedisServerOptions {
  /** `appendonly yes` + `appendfsync always`: every acknowledged write survives SIGKILL. */
  durable?: boolean;
  cluster?: boolean;
  port?: number;
  dir?: string;
  /** Requires AUTH: with `user`, an ACL user with this password; else `requirepass`. */
  password?: string;
  user?: string;
}

export class RedisServer {
  private proc: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  log = '';

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly opts: RedisServerOptions,
  ) {}

  static async start(opts: RedisServerOptions = {}): Promise<RedisServer> {
    // A cluster node also listens on its port + 10,000 (the cluster bus): both free and claimed.
    const port = opts.port ?? (await freePort(opts.cluster ? { alsoFree: 10_000 } : {}));
    const server = new RedisServer(port, opts.dir ?? tempDir('vigil-redis-'), opts);
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--protected-mode', 'no'];
    if (this.opts.durable) args.push('--appendonly', 'yes', '--appendfsync', 'always');
    else args.push('--appendonly', 'no');
    if (this.opts.password && this.opts.user) args.push('--user', this.opts.user, 'on', `>${this.opts.password}`, '~*', '&*', '+@all', '--user', 'default', 'off');
    else if (this.opts.password) args.push('--requirepass', this.opts.password);
    if (this.opts.cluster) args.push('--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000');
    const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout!.on('data', (d: Buffer) => (this.log += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (this.log += d.toString()));
    this.proc = proc;
    this.exited = new Promise((r) => proc.once('exit', () => r()));
    const auth = this.opts.password ? [...(this.opts.user ? ['--user', this.opts.user] : []), '--pass', this.opts.password, '--no-auth-warning'] : [];
    try {
      // The server answering must be the one just spawned: a restart reuses the port, and while it
      // was down another process (a second test run on the machine) may have taken it — then this
      // one fails to bind and exits, and a ping alone would be answered by the stranger.
      await waitFor(
        () => {
          if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`redis-server on ${this.port} exited (port taken?)`);
          const info = spawnSync('redis-cli', ['-p', String(this.port), ...auth, 'info', 'server']).stdout?.toString() ?? '';
          return info.includes(`process_id:${proc.pid}\r\n`) ? true : undefined;
        },
        `redis-server on ${this.port}`,
        20_000,
      );
    } catch (err) {
      // A server that did not come up must not outlive the test (its pipes would keep the test
      // file's process alive): stop it and say what it printed.
      await this.kill();
      throw new Error(`${(err as Error).message}\n${this.log}`, { cause: err });
    }
  }

  /** SIGKILL: what a crash of the Redis host looks like. */
  async kill(): Promise<void> {
    this.proc?.kill('SIGKILL');
    await this.exited;
    this.proc = undefined;
  }

  async stop(): Promise<void> {
    this.proc?.kill('SIGTERM');
    await this.exited;
    this.proc = undefined;
  }
}

/** A Redis Cluster of three masters (no replicas) on local ports, as `redis-cli --cluster create` makes it. */
export class RedisCluster {
  private constructor(readonly servers: RedisServer[]) {}

  static async start(): Promise<RedisCluster> {
    const started = await Promise.allSettled([0, 1, 2].map(() => RedisServer.start({ cluster: true })));
    const servers = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await Promise.all(servers.map((x) => x.stop()));
      throw failed.reason;
    }
    const cluster = new RedisCluster(servers);
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (create.status !== 0) {
      await cluster.stop();
      throw new Error(`redis-cli --cluster create failed: ${create.stdout}\n${create.stderr}`);
    }
    await waitFor(
      async () => {
        for (const s of servers) {
          const c = new Redis({ port: s.port, lazyConnect: true });
          try {
            await c.connect();
            const info = await c.cluster('INFO');
            if (!String(info).includes('cluster_state:ok')) return undefined;
          } finally {
            c.disconnect();
          }
        }
        return true;
      },
      'the cluster to be ok',
      20_000,
    );
    return cluster;
  }

  get url(): string {
    return this.servers[0]!.url;
  }

  get nodes(): string[] {
    return this.servers.slice(1).map((s) => s.url);
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}

/** Deletes every key under a prefix (single node), so tests leave the shared Redis clean. */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const c = new Redis(url, { lazyConnect: true });
  await c.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await c.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await c.del(...keys);
    } while (cursor !== '0');
  } finally {
    c.disconnect();
  }
}
