/**
 * The client listeners (--listen-client-urls): one HTTP server per URL, all serving the same
 * request handler and websocket upgrades.
 *
 * The handler is the API face's express app, `createApp(member)` from src/api/index.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { createApp } from '../api/index.js';
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
 * The API faces (src/api) over `member`. Hooks the factory's result may carry, which the
 * listeners then wire: `handleUpgrade(req, socket, head)` (websocket watches; returns false
 * for paths it does not serve) and `close()` (ends open streams at stop).
 */
export function apiFace(member: MemberApi, logger: Logger): ClientFace {
  const app = createApp(member, { logger }) as RequestHandler & {
    handleUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;
    close?: () => Promise<void> | void;
  };
  const face: ClientFace = { handler: app };
  const upgrade = app.handleUpgrade;
  if (typeof upgrade === 'function') {
    face.upgrade = (req, socket, head) => {
      if (!upgrade.call(app, req, socket, head)) socket.destroy();
    };
  }
  if (typeof app.close === 'function') face.close = () => app.close?.();
  return face;
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
    await Promise.all(this.servers.map(closeServer));
    await this.face.close?.();
  }
}
