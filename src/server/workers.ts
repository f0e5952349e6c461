/**
 * `etcetera serve --workers N`, the member's side: N worker processes (node:cluster) that
 * share the client port and serve every client face over this member, which keeps Raft,
 * the store and its peer port, and serves its faces only on a unix socket in its data dir
 * (mode 0600 in a 0700 folder, `ListenOptions.unixSocket`; in the temporary dir when the
 * data dir's path is too long for one, `workerSocketPath`), the workers' upstream.
 *
 * Ports: each worker listens on the client URLs itself; node:cluster binds them once in
 * this process and hands each accepted connection, unread, to a worker in turn (its
 * round-robin scheduling), so the worker sniffs gRPC from HTTP/1.1 and does the TLS
 * handshake exactly as a member's own listener does (client-http.ts). A URL with port 0 is
 * bound at the first worker's listen; the pool then gives every later worker the port it got.
 *
 * Configuration has one source, the member's MemberConfig: the pool sends each worker, as
 * its first IPC message, a WorkerSpec built from it (`workerSpec`): the client settings
 * (client-http.ts `clientConfigOf`), the Kubernetes auth flags with the member's loopback
 * token, and the client TLS material already loaded here (so --auto-tls's certificate is
 * the same on every worker). --max-connections is shared out: each worker takes
 * ceil(max / N).
 *
 * A worker that exits is forked again after a backoff (100 ms doubling to 5 s; back to
 * 100 ms once a worker has run 10 s), logged at warn; its clients reconnect to the port and
 * land on another worker. A worker whose member process died (the IPC channel closed)
 * exits. `stop` disconnects the workers (they close their listeners and exit) and kills
 * any that are still there after a grace period.
 */
import cluster, { type Worker } from 'node:cluster';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EtceteraError } from '../errors.js';
import { type ClientConfig, clientConfigOf, MAX_UNIX_PATH } from './client-http.js';
import {
  type KubeAuthConfig,
  type LogLevel,
  type MemberConfig,
  requestTimeoutMs,
} from './config.js';
import type { Logger } from './logger.js';
import type { LoadedTls } from './tls.js';

/** The environment variable that makes src/cli.ts run as a worker. */
export const WORKER_ENV = 'ETCETERA_WORKER_SLOT';

/** What a worker is told by its member: everything it serves from. */
export interface WorkerSpec {
  /** The member's name (its log lines carry it). */
  name: string;
  logLevel: LogLevel;
  /** The member's gRPC services: `unix:<data dir>/workers/member.sock`. */
  upstream: string;
  /** The client URLs to listen on (shared through node:cluster), ports resolved once known. */
  listenClientUrls: string[];
  client: ClientConfig;
  kubeAuth: KubeAuthConfig;
  clientCertAuth: boolean;
  /** The member's control-plane token (kube-auth.ts), accepted by every worker alike. */
  loopbackToken: string | undefined;
  /** The client port's certificate, key and CA as loaded by the member. */
  tls: LoadedTls | undefined;
  /** How long a request waits for the worker's upstream before a 503, and per upstream call. */
  readyTimeoutMs: number;
  /** --max-request-bytes. */
  maxRequestBytes: number;
}

/** Messages from a worker to the pool. */
export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'listening'; urls: string[] }
  | { type: 'failed'; error: string; code?: string };

/**
 * The socket a member with workers serves on: `workers/member.sock` in its data dir, or, when
 * that path is longer than a unix socket path may be, the same name in a folder of the
 * system's temporary dir named after the data dir's absolute path (the folder must be this
 * user's, mode 0700: client-http.ts checks).
 */
export function workerSocketPath(dataDir: string): string {
  const inDataDir = join(resolve(dataDir), 'workers', 'member.sock');
  if (Buffer.byteLength(inDataDir) <= MAX_UNIX_PATH) return inDataDir;
  const tag = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 20);
  return join(tmpdir(), `etcetera-workers-${tag}`, 'member.sock');
}

/** The spec of a member's workers, from its config, TLS and Kubernetes auth. */
export function workerSpec(
  config: MemberConfig,
  loaded: { tls: LoadedTls | undefined; loopbackToken: string | undefined },
): WorkerSpec {
  const client = clientConfigOf(config);
  return {
    name: config.name,
    logLevel: config.logLevel,
    upstream: `unix:${workerSocketPath(config.dataDir)}`,
    listenClientUrls: config.listenClientUrls.map((u) => u.href),
    client: { ...client, maxConnections: Math.ceil(config.maxConnections / config.workers) },
    kubeAuth: config.kubeAuth,
    clientCertAuth: config.clientTls.clientCertAuth,
    loopbackToken: loaded.loopbackToken,
    tls: loaded.tls,
    readyTimeoutMs: requestTimeoutMs(config.electionMs),
    maxRequestBytes: config.maxRequestBytes,
  };
}

/** The module a worker runs: the CLI, which turns into a worker under WORKER_ENV. */
function workerModule(): string {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return fileURLToPath(new URL(`../cli${ext}`, import.meta.url));
}

const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5000;
/** A worker that ran this long resets its slot's backoff. */
const STABLE_MS = 10_000;
const STOP_GRACE_MS = 5000;

interface Slot {
  index: number;
  worker: Worker | undefined;
  pid: number | undefined;
  startedAt: number;
  backoffMs: number;
  restarts: number;
  timer: NodeJS.Timeout | undefined;
}

export interface WorkerPoolOptions {
  count: number;
  spec: WorkerSpec;
  logger: Logger;
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private stopping = false;
  private spec: WorkerSpec;
  private bound: URL[] = [];

  private constructor(private readonly o: WorkerPoolOptions) {
    this.spec = o.spec;
  }

  /**
   * Forks the workers; resolves once each is listening on the client URLs (their bound
   * ports known), or rejects with the first one's start error (a port in use, a bad
   * certificate), stopping the others.
   */
  static async start(o: WorkerPoolOptions): Promise<WorkerPool> {
    if (!cluster.isPrimary)
      throw new EtceteraError('ERR_INVALID_ARGUMENT', {
        detail: '--workers: a worker process cannot start workers of its own',
      });
    cluster.setupPrimary({
      exec: workerModule(),
      args: [],
      execArgv: process.execArgv,
      serialization: 'advanced',
    });
    const pool = new WorkerPool(o);
    const first = Array.from({ length: o.count }, (_, index) => pool.fork(pool.slot(index)));
    try {
      const urls = await Promise.all(first);
      pool.bound = (urls[0] ?? []).map((u) => new URL(u));
      // Later forks (restarts) listen on the ports the first ones got.
      pool.spec = { ...pool.spec, listenClientUrls: pool.bound.map((u) => u.href) };
    } catch (e) {
      await pool.stop();
      throw e;
    }
    return pool;
  }

  /** The client URLs the workers listen on (port 0 resolved). */
  get urls(): URL[] {
    return this.bound;
  }

  /** The PIDs of the workers running now, by slot. */
  pids(): (number | undefined)[] {
    return this.slots.map((s) => s.pid);
  }

  private slot(index: number): Slot {
    const s: Slot = {
      index,
      worker: undefined,
      pid: undefined,
      startedAt: 0,
      backoffMs: FIRST_BACKOFF_MS,
      restarts: 0,
      timer: undefined,
    };
    this.slots[index] = s;
    return s;
  }

  /** Forks the slot's worker; resolves with its listening URLs, rejects if it fails first. */
  private fork(s: Slot): Promise<string[]> {
    const w = cluster.fork({ [WORKER_ENV]: String(s.index) });
    s.worker = w;
    s.pid = w.process.pid;
    s.startedAt = Date.now();
    const log = this.o.logger;
    return new Promise((resolve, reject) => {
      let listening = false;
      w.on('message', (m: WorkerMessage) => {
        // Asked for, not pushed at 'online': a message that arrives before the worker's
        // module has its listener is lost.
        if (m.type === 'ready') w.send({ type: 'spec', spec: this.spec });
        else if (m.type === 'listening') {
          listening = true;
          log.info({ worker: s.index, pid: s.pid, urls: m.urls }, 'worker listening');
          resolve(m.urls);
        } else if (m.type === 'failed') {
          log.error({ worker: s.index, pid: s.pid, err: m.error }, 'worker failed to start');
          if (!listening)
            reject(
              new EtceteraError('ERR_WORKER_START', {
                detail: `worker ${s.index} failed to start: ${m.error}`,
              }),
            );
        }
      });
      w.on('error', () => undefined);
      w.once('exit', (code, signal) => {
        if (s.worker === w) {
          s.worker = undefined;
          s.pid = undefined;
        }
        if (!listening) {
          reject(
            new EtceteraError('ERR_WORKER_START', {
              detail: `worker ${s.index} exited before listening (code ${code}, signal ${signal})`,
            }),
          );
          if (this.bound.length === 0) return; // the first start: the pool fails as a whole
        }
        if (this.stopping) return;
        this.restart(s, w.process.pid, code, signal);
      });
    });
  }

  private restart(s: Slot, pid: number | undefined, code: number | null, signal: string | null) {
    if (Date.now() - s.startedAt >= STABLE_MS) s.backoffMs = FIRST_BACKOFF_MS;
    const delayMs = s.backoffMs;
    s.backoffMs = Math.min(MAX_BACKOFF_MS, s.backoffMs * 2);
    s.restarts++;
    this.o.logger.warn(
      { worker: s.index, pid, code, signal, restartInMs: delayMs, restarts: s.restarts },
      'worker exited; restarting',
    );
    s.timer = setTimeout(() => {
      s.timer = undefined;
      if (this.stopping) return;
      // A restart that fails is restarted again by its own exit handler.
      this.fork(s).catch(() => undefined);
    }, delayMs);
  }

  /** Ends every worker: disconnect (they close and exit), then SIGKILL after a grace period. */
  async stop(): Promise<void> {
    this.stopping = true;
    const running: Promise<void>[] = [];
    for (const s of this.slots) {
      if (s === undefined) continue;
      clearTimeout(s.timer);
      const w = s.worker;
      if (w === undefined || w.isDead()) continue;
      running.push(
        new Promise<void>((resolve) => {
          const kill = setTimeout(() => w.process.kill('SIGKILL'), STOP_GRACE_MS);
          w.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          if (w.isConnected()) w.disconnect();
          else w.process.kill('SIGTERM');
        }),
      );
    }
    await Promise.all(running);
  }
}
