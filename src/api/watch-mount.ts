/**
 * /v3/watch in the etcd face: the framework-free handlers of etcd/watch/
 * over a watch cache (src/watchcache) following the member's watch source.
 *
 * The cache is made on the first watch (a member nobody watches keeps no event window), or
 * shared when the caller passes one (one window for the etcd and Kubernetes faces). Both
 * wire forms are served: the HTTP stream (POST) through `http`, websockets through
 * `handleUpgrade` from the HTTP server's 'upgrade' event.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { MemberApi } from '../server/types.js';
import { Cacher } from '../watchcache/index.js';
import { canonicalEtcdPath } from './etcd/paths.js';
import { callerContext, httpCredentials, watchPermits } from './etcd/route.js';
import {
  createEtcdWatchHandlers,
  type EtcdWatchHandlers,
  type EtcdWatchOptions,
} from './etcd/watch/index.js';

export const WATCH_PATH = '/v3/watch';
const CACHE_METRIC_PREFIX = 'etcetera_watchcache_';

export interface WatchMountOptions {
  /** A watch cache to share; default: one made on the first watch and closed by close(). */
  cacher?: Cacher;
  /** --max-request-bytes for watch requests. */
  maxRequestBytes: number;
  /** Stream tuning passed to the handlers (fragment size, high water mark, watch bound). */
  watch?: Pick<EtcdWatchOptions, 'fragmentMaxBytes' | 'highWaterBytes' | 'maxWatchesPerStream'>;
}

export class WatchMount {
  private handlers: EtcdWatchHandlers | undefined;
  private ownCacher: Cacher | undefined;
  private wss: WebSocketServer | undefined;
  private closed = false;

  constructor(
    private readonly member: MemberApi,
    private readonly options: WatchMountOptions,
  ) {}

  /** POST /v3/watch: the gateway's newline-delimited stream. */
  http(req: IncomingMessage, res: ServerResponse): void {
    this.ensure().http(req, res);
  }

  /**
   * For the HTTP server's 'upgrade' event: takes websocket upgrades on /v3/watch and returns
   * true; returns false for any other path (another face may take it).
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    if (
      canonicalEtcdPath(new URL(req.url ?? '/', 'http://x').pathname) !== WATCH_PATH ||
      this.closed
    )
      return false;
    const handlers = this.ensure();
    this.wss ??= new WebSocketServer({
      noServer: true,
      maxPayload: this.options.maxRequestBytes + 1024,
    });
    this.wss.handleUpgrade(req, socket, head, (ws) => handlers.websocket(ws, req));
    return true;
  }

  /** Ends every watch stream and, if this mount made it, the watch cache. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.wss) {
      for (const ws of this.wss.clients) ws.terminate();
      this.wss.close();
    }
    this.ownCacher?.close();
  }

  private ensure(): EtcdWatchHandlers {
    if (this.handlers) return this.handlers;
    const cacher = this.options.cacher ?? this.makeCacher();
    const member = this.member;
    this.handlers = createEtcdWatchHandlers({
      cacher,
      maxRequestBytes: this.options.maxRequestBytes,
      ...this.options.watch,
      authorize:
        member.auth === undefined
          ? undefined
          : async (req) => {
              const ctx = await callerContext(
                { member, maxRequestBytes: this.options.maxRequestBytes },
                httpCredentials(req),
              );
              return watchPermits(ctx.member);
            },
      header: () => {
        const h = member.header();
        return { clusterId: h.clusterId, memberId: h.memberId, raftTerm: String(h.raftTerm) };
      },
    });
    return this.handlers;
  }

  private makeCacher(): Cacher {
    // Register the cache's metrics with the member's unless another cache already did
    // (prom-client refuses a second series of the same name).
    const registry = this.member.metrics;
    const taken = registry.getSingleMetric(`${CACHE_METRIC_PREFIX}watchers`) !== undefined;
    this.ownCacher = new Cacher(this.member.watchSource, {
      registry: taken ? undefined : registry,
      metricPrefix: CACHE_METRIC_PREFIX,
    });
    return this.ownCacher;
  }
}
