/**
 * The client listeners (--listen-client-urls): one HTTP server per URL, all serving the same
 * request handler and websocket upgrades.
 *
 * The handler is the etcd face from src/api (`createEtcdApi`).
 *
 * Serving waits for a `ServeGate`: the listeners are bound at start (the member must know
 * its client ports to announce them), and accept connections, but every request and
 * websocket upgrade is held until the gate opens, which the member does once its own publish
 * is applied, as etcd serves clients only after its publish. Clients connecting early
 * simply wait, as they would for a slow server, rather than seeing a refused connection or
 * a member list in which this member has no client URLs. A request held longer than the
 * gate's timeout is answered 503 (ERR_UNHEALTHY: not published yet), so nothing hangs.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AccessOptions } from '../api/access.js';
import { type ApiOptions, createEtcdApi } from '../api/index.js';
import { sendError } from '../api/respond.js';
import { EtceteraError } from '../errors.js';
import type { Logger } from './logger.js';
import { closeServer, listen } from './peer-http.js';
import type { MemberApi } from './types.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export interface ClientFace {
  handler: RequestHandler;
  /** Websocket upgrades (watch streams), when the face serves any. */
  upgrade?: UpgradeHandler;
  close?(): Promise<void> | void;
}

/**
 * The etcd face (src/api) over `member`: its routes and /v3/watch over the member's watch
 * cache, websocket watches through `handleUpgrade`, and `close` ending open watch streams.
 */
export function apiFace(
  member: MemberApi,
  logger: Logger,
  options: { access?: AccessOptions; watch?: ApiOptions['watch'] } = {},
): ClientFace {
  const api = createEtcdApi(member, {
    logger,
    cacher: member.watchCache,
    access: options.access,
    watch: options.watch,
  });
  return {
    handler: api.app,
    upgrade: (req, socket, head) => {
      if (!api.handleUpgrade(req, socket, head)) socket.destroy();
    },
    close: () => api.close(),
  };
}

/** Holds client requests until `open()`; a request waits at most `timeoutMs`. */
export class ServeGate {
  private opened = false;
  private readonly waiting = new Set<() => void>();

  constructor(private readonly timeoutMs: number) {}

  get isOpen(): boolean {
    return this.opened;
  }

  open(): void {
    if (this.opened) return;
    this.opened = true;
    for (const release of this.waiting) release();
    this.waiting.clear();
  }

  /** Resolves true once open, false when `timeoutMs` passed first. */
  wait(): Promise<boolean> {
    if (this.opened) return Promise.resolve(true);
    return new Promise((resolve) => {
      const release = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiting.delete(release);
        resolve(false);
      }, this.timeoutMs);
      this.waiting.add(release);
    });
  }

  /** The face's handlers, held behind this gate. */
  guard(face: ClientFace): ClientFace {
    const notYet = () =>
      new EtceteraError('ERR_UNHEALTHY', { detail: 'this member has not published itself yet' });
    const upgrade = face.upgrade;
    return {
      handler: (req, res) => {
        if (this.opened) return face.handler(req, res);
        void this.wait().then((ok) => {
          if (res.destroyed) return;
          if (ok) face.handler(req, res);
          else sendError(res, notYet());
        });
      },
      ...(upgrade === undefined
        ? {}
        : {
            upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => {
              if (this.opened) return upgrade(req, socket, head);
              void this.wait().then((ok) => {
                if (socket.destroyed) return;
                if (ok) upgrade(req, socket, head);
                else
                  socket.end(
                    'HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
                  );
              });
            },
          }),
      close: () => {
        this.open();
        return face.close?.();
      },
    };
  }
}

/** Listening client servers; `urls` are the bound addresses (port 0 resolved). */
export class ClientListeners {
  private constructor(
    private readonly servers: Server[],
    readonly urls: URL[],
    private readonly face: ClientFace,
  ) {}

  static async open(face: ClientFace, listenUrls: URL[]): Promise<ClientListeners> {
    const servers: Server[] = [];
    const urls: URL[] = [];
    try {
      for (const u of listenUrls) {
        const server = createServer(face.handler);
        if (face.upgrade !== undefined) server.on('upgrade', face.upgrade);
        else server.on('upgrade', (_req, socket: Duplex) => socket.destroy());
        servers.push(server);
        const a = await listen(server, u);
        const bound = new URL(u.href);
        bound.port = String(a.port);
        urls.push(bound);
      }
    } catch (e) {
      await Promise.all(servers.map(closeServer));
      throw e;
    }
    return new ClientListeners(servers, urls, face);
  }

  /** Stops accepting, ends open connections (watch streams included). */
  async close(): Promise<void> {
    // The face first, so open watch streams end with a proper close, then the sockets.
    await this.face.close?.();
    await Promise.all(this.servers.map(closeServer));
  }
}
