/**
 * The client listeners (--listen-client-urls): one HTTP server per URL, all serving the same
 * request handler and websocket upgrades.
 *
 * The handler is the API face's express app, `createApp(member)` from src/api/index.ts.
 * While that module is absent (the faces are built in parallel) the member serves a minimal
 * face of its own: GET /health and GET /metrics, with etcd's shapes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
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

/** What src/api/index.ts exports (checked at run time: the module may not exist yet). */
interface ApiModule {
  createApp(member: MemberApi): RequestHandler | ClientFace;
}

// A variable, not a literal: the build must not require the module to exist.
const API_MODULE = '../api/index.js';

/** The API face for `member`, or the minimal face when src/api is not there. */
export async function loadClientFace(member: MemberApi): Promise<ClientFace> {
  let mod: Partial<ApiModule> | undefined;
  try {
    mod = (await import(API_MODULE)) as Partial<ApiModule>;
  } catch (e) {
    // Only the face module itself may be missing; a broken import inside it is an error.
    const err = e as { code?: string; message?: string };
    if (err.code !== 'ERR_MODULE_NOT_FOUND' || !/api[\\/]index\.[jt]s/.test(err.message ?? ''))
      throw e;
  }
  if (typeof mod?.createApp !== 'function') return { handler: minimalHandler(member) };
  const app = mod.createApp(member);
  return typeof app === 'function' ? { handler: app } : app;
}

/** GET /health and GET /metrics only: enough to run and probe a member without src/api. */
export function minimalHandler(member: MemberApi): RequestHandler {
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path === '/health') {
      const h = member.health();
      const body = JSON.stringify({ health: String(h.health), reason: h.reason });
      res.writeHead(h.health ? 200 : 503, { 'content-type': 'application/json' }).end(body);
      return;
    }
    if (req.method === 'GET' && path === '/metrics') {
      void member.metrics.metrics().then(
        (text) => res.writeHead(200, { 'content-type': member.metrics.contentType }).end(text),
        (e: unknown) => res.writeHead(500).end(String(e)),
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'Not Found', code: 5, message: 'Not Found' }));
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
    await Promise.all(this.servers.map(closeServer));
    await this.face.close?.();
  }
}
