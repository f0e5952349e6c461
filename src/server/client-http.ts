/**
 * The client listeners (--listen-client-urls): one HTTP server per URL, all serving the same
 * request handler and websocket upgrades.
 *
 * The handler is the etcd face from src/api (`createEtcdApi`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type ApiOptions, createEtcdApi } from '../api/index.js';
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
  watch?: ApiOptions['watch'],
): ClientFace {
  const api = createEtcdApi(member, { logger, cacher: member.watchCache, watch });
  return {
    handler: api.app,
    upgrade: (req, socket, head) => {
      if (!api.handleUpgrade(req, socket, head)) socket.destroy();
    },
    close: () => api.close(),
  };
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
