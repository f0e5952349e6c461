/**
 * The client listeners (--listen-client-urls): one TCP listener per URL, each serving etcd's
 * gRPC API and the HTTP faces on the same port, as etcd's client port does. A connection
 * that opens with the HTTP/2 client preface (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`) is gRPC over
 * cleartext HTTP/2 and goes to the gRPC face (src/api/grpc); anything else is HTTP/1.1 and goes
 * to the URL's node:http server (the etcd JSON face from src/api, `createEtcdApi`, with its
 * websocket upgrades). The first bytes read to decide are put back before the socket is handed
 * over, so the chosen server sees the connection from its first byte.
 *
 * An https:// URL (--cert-file/--key-file or --auto-tls, src/server/tls.ts) serves the same
 * faces over TLS 1.2+: ALPN "h2" goes to gRPC, anything else (ALPN "http/1.1" or none) to the
 * HTTP/1.1 server; a client offering both gets "http/1.1" (gRPC clients offer only "h2"). A connection whose first byte is not a TLS handshake record is a
 * plaintext client on the TLS port: it is answered `400 Bad Request` with "Client sent an
 * HTTP request to an HTTPS server." (Go's text, which etcd's clients show) and closed; a
 * failed handshake (no client certificate or one not signed by --trusted-ca-file under
 * --client-cert-auth, an expired one) closes that connection only and is logged at debug.
 *
 * Serving waits for a `ServeGate`: the listeners are bound at start (the member must know
 * its client ports to announce them), and accept connections, but every request and
 * websocket upgrade is held until the gate opens, which the member does once its own publish
 * is applied, as etcd serves clients only after its publish. Clients connecting early
 * simply wait, as they would for a slow server, rather than seeing a refused connection or
 * a member list in which this member has no client URLs. A request held longer than the
 * gate's timeout is answered 503 (ERR_UNHEALTHY: not published yet), so nothing hangs.
 *
 * Limits (`ClientLimits`, from --max-connections and --read-header-timeout): the member holds
 * at most `maxConnections` client connections over all its listeners, and closes one more as
 * soon as it is accepted; a connection must send its first bytes within the header timeout,
 * an HTTP/1.1 request its headers (node:http's headersTimeout), and an HTTP/2 connection its
 * preface and the answer to the member's SETTINGS, or it is closed. node:http's
 * requestTimeout is off on purpose: it would cut the etcd watch stream, whose request body
 * stays open for as long as the stream; request bodies have their own deadline where they
 * are read (src/api/body.ts). Nothing here limits a connection once it is serving.
 */
import { chmod, lstat, mkdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { dirname } from 'node:path';
import type { Duplex } from 'node:stream';
import {
  createServer as createTlsServer,
  type TLSSocket,
  type Server as TlsServer,
} from 'node:tls';
import type { AccessOptions } from '../api/access.js';
import { createGrpcFace, type GrpcFace, type GrpcKeepalive } from '../api/grpc/server.js';
import { type ApiOptions, createEtcdApi } from '../api/index.js';
import { sendError } from '../api/respond.js';
import { EtceteraError } from '../errors.js';
import type { MemberConfig } from './config.js';
import { H2Preamble } from './h2-authority.js';
import type { KubeAuth } from './kube-auth.js';
import type { Logger } from './logger.js';
import { listen } from './peer-http.js';
import { type LoadedTls, recordCertIdentity } from './tls.js';
import type { MemberApi } from './types.js';
import { ETCD_CLUSTER_VERSION, ETCD_VERSION } from './version.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export interface ClientFace {
  handler: RequestHandler;
  /** Websocket upgrades (watch streams), when the face serves any. */
  upgrade?: UpgradeHandler;
  /** etcd's gRPC API, for connections that open with the HTTP/2 preface. */
  grpc?: GrpcFace;
  close?(): Promise<void> | void;
}

/**
 * The etcd face (src/api) over `member`: its routes and /v3/watch over the member's watch
 * cache, websocket watches through `handleUpgrade`, the gRPC API, and `close` ending open
 * watch streams and gRPC calls.
 */
export function apiFace(
  member: MemberApi,
  logger: Logger,
  options: ApiFaceOptions = {},
): ClientFace {
  const api = createEtcdApi(member, {
    logger,
    cacher: member.watchCache,
    version: { server: ETCD_VERSION, cluster: ETCD_CLUSTER_VERSION },
    access: options.access,
    watch: options.watch,
    ...(options.readBodyTimeoutMs !== undefined
      ? { readBodyTimeoutMs: options.readBodyTimeoutMs }
      : {}),
    ...(options.kubernetes !== undefined ? { kubernetes: options.kubernetes } : {}),
  });
  const grpc = createGrpcFace(member, {
    logger,
    ...(options.watch?.maxWatchesPerStream !== undefined
      ? { maxWatchesPerStream: options.watch.maxWatchesPerStream }
      : {}),
    ...options.grpc,
  });
  return {
    handler: api.app,
    upgrade: (req, socket, head) => {
      if (!api.handleUpgrade(req, socket, head)) socket.destroy();
    },
    grpc,
    close: async () => {
      await grpc.close();
      await api.close();
    },
  };
}

export interface ApiFaceOptions {
  access?: AccessOptions;
  watch?: ApiOptions['watch'];
  grpc?: { maxConcurrentStreams?: number; keepalive?: GrpcKeepalive };
  kubernetes?: ApiOptions['kubernetes'];
  readBodyTimeoutMs?: number;
}

/**
 * A member's client-facing settings, plain data: what its faces and client listeners are
 * built from, in the member's process or in a worker process (--workers, workers.ts), which
 * gets them from the member so that both serve alike.
 */
export interface ClientConfig
  extends Pick<
    MemberConfig,
    | 'cors'
    | 'hostWhitelist'
    | 'maxWatchesPerStream'
    | 'maxConcurrentStreams'
    | 'grpcKeepaliveMinTimeMs'
    | 'grpcKeepaliveIntervalMs'
    | 'grpcKeepaliveTimeoutMs'
    | 'serviceClusterIpRange'
    | 'readBodyTimeoutMs'
    | 'maxConnections'
    | 'readHeaderTimeoutMs'
  > {
  gracefulPodDeletion: boolean;
  /** Host names of the listen and advertise client URLs (the Host check accepts them). */
  clientHosts: string[];
}

export function clientConfigOf(config: MemberConfig): ClientConfig {
  const { listenClientUrls, advertiseClientUrls } = config;
  return {
    cors: config.cors,
    hostWhitelist: config.hostWhitelist,
    maxWatchesPerStream: config.maxWatchesPerStream,
    maxConcurrentStreams: config.maxConcurrentStreams,
    grpcKeepaliveMinTimeMs: config.grpcKeepaliveMinTimeMs,
    grpcKeepaliveIntervalMs: config.grpcKeepaliveIntervalMs,
    grpcKeepaliveTimeoutMs: config.grpcKeepaliveTimeoutMs,
    serviceClusterIpRange: config.serviceClusterIpRange,
    readBodyTimeoutMs: config.readBodyTimeoutMs,
    maxConnections: config.maxConnections,
    readHeaderTimeoutMs: config.readHeaderTimeoutMs,
    gracefulPodDeletion: config.controlPlane.gracefulPodDeletion,
    clientHosts: [...listenClientUrls, ...advertiseClientUrls].map((u) => u.hostname),
  };
}

/** The options of `apiFace` from a member's client settings and its Kubernetes auth. */
export function faceOptions(c: ClientConfig, kubeAuth: KubeAuth): ApiFaceOptions {
  return {
    access: { corsOrigins: c.cors, hostWhitelist: c.hostWhitelist, clientHosts: c.clientHosts },
    watch: { maxWatchesPerStream: c.maxWatchesPerStream },
    grpc: {
      maxConcurrentStreams: c.maxConcurrentStreams,
      keepalive: {
        minTimeMs: c.grpcKeepaliveMinTimeMs,
        intervalMs: c.grpcKeepaliveIntervalMs,
        timeoutMs: c.grpcKeepaliveTimeoutMs,
      },
    },
    kubernetes: {
      gracefulPodDeletion: c.gracefulPodDeletion,
      serviceClusterIpRange: c.serviceClusterIpRange,
      authentication: kubeAuth.authentication,
      authorizationMode: kubeAuth.authorizationMode,
      ...(kubeAuth.audit ? { audit: kubeAuth.audit } : {}),
    },
    readBodyTimeoutMs: c.readBodyTimeoutMs,
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
      ...(face.grpc === undefined ? {} : { grpc: this.guardGrpc(face.grpc) }),
      close: () => {
        this.open();
        return face.close?.();
      },
    };
  }

  /** gRPC connections wait for the gate too; one still waiting at its timeout is closed. */
  private guardGrpc(grpc: GrpcFace): GrpcFace {
    return {
      injectConnection: (socket) => {
        if (this.opened) return grpc.injectConnection(socket);
        void this.wait().then((ok) => {
          if (socket.destroyed) return;
          if (ok) grpc.injectConnection(socket);
          else socket.destroy();
        });
      },
      close: () => grpc.close(),
    };
  }
}

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
export const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/**
 * Reads the first bytes of `socket` until they either are the HTTP/2 preface or cannot be,
 * puts them back, and calls `to` with the verdict. Waits no longer than needed: the first byte
 * that differs from the preface decides for HTTP/1.1.
 */
export function sniffProtocol(
  socket: Socket,
  to: (protocol: 'h2c' | 'http1', head: Buffer) => void,
): void {
  let got: Buffer | undefined;
  const onData = (chunk: Buffer) => {
    got = got === undefined ? chunk : Buffer.concat([got, chunk]);
    const n = Math.min(got.length, HTTP2_PREFACE.length);
    const prefix = got.subarray(0, n).equals(HTTP2_PREFACE.subarray(0, n));
    if (prefix && got.length < HTTP2_PREFACE.length) return;
    socket.off('data', onData);
    socket.pause();
    to(prefix ? 'h2c' : 'http1', got);
  };
  socket.on('data', onData);
}

/**
 * Hands a sniffed socket to an HTTP/1.1 server. node:http reads a fresh socket's native handle
 * directly (bypassing the stream's buffer, where an unshift would put the bytes), so the bytes
 * already read go to its data listener instead, then reading resumes.
 */
function toHttp1(http: Server, socket: Socket, head: Buffer): void {
  http.emit('connection', socket);
  socket.emit('data', head);
  socket.resume();
}

/** How long after the client answered the preamble's SETTINGS it waits for the first request. */
export const PREAMBLE_REQUEST_MS = 200;

/**
 * Hands a sniffed socket to node:http2 (via grpc-js), which takes buffered bytes first, once
 * the preamble (h2-authority.ts) has read up to the first request and fixed its :authority.
 */
function toH2c(grpc: GrpcFace, socket: Socket, head: Buffer, limits: ClientLimits): void {
  const pre = new H2Preamble(HTTP2_PREFACE.length);
  let timer: NodeJS.Timeout | undefined;
  let answered = false;
  let finished = false;
  const onError = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const finish = (bytes: Buffer) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('error', onError);
    socket.pause();
    socket.unshift(bytes);
    grpc.injectConnection(socket);
  };
  const arm = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      // A client that never answered the SETTINGS is not speaking HTTP/2 (or is stalling).
      if (!pre.answered) {
        limits.onTimedOut?.('preface');
        socket.destroy();
      } else finish(pre.giveUp());
    }, ms);
    timer.unref();
  };
  const onData = (chunk: Buffer) => {
    const step = pre.push(chunk);
    if (step.kind === 'done') return finish(step.bytes);
    if (step.reply !== undefined) socket.write(step.reply);
    if (pre.answered && !answered) {
      answered = true;
      arm(PREAMBLE_REQUEST_MS);
    }
  };
  socket.on('error', onError);
  arm(limits.readHeaderTimeoutMs);
  socket.on('data', onData);
  onData(head);
  if (!finished) socket.resume();
}

interface Listener {
  net: NetServer;
  http: Server;
  sockets: Set<Socket>;
  tls?: TlsServer;
}

/** What a member's client port bounds (README, "Limits"). */
export interface ClientLimits {
  /** Open connections over all the member's client listeners. */
  maxConnections: number;
  /** First bytes, HTTP/1.1 headers, HTTP/2 preface and SETTINGS answer. */
  readHeaderTimeoutMs: number;
  /** Called for each connection closed at accept because `maxConnections` were open. */
  onRefused?(): void;
  /** Called for each connection closed for being too slow to start. */
  onTimedOut?(reason: 'header' | 'preface'): void;
}

/** How the listeners serve: their limits, and for https:// URLs the certificates. */
export interface ListenOptions extends ClientLimits {
  tls?: LoadedTls;
  logger?: Logger;
  /**
   * Also serve the faces, in plaintext, on a unix socket at this path (the channel of
   * --workers, src/server/workers.ts): its folder is made mode 0700 and the socket 0600, so
   * only this user on this machine can connect. A stale socket left by a killed member is
   * removed first.
   */
  unixSocket?: string;
}

/** The longest unix socket path Linux takes (sun_path is 108 bytes with its NUL). */
export const MAX_UNIX_PATH = 107;

async function listenUnix(server: NetServer, path: string): Promise<void> {
  if (Buffer.byteLength(path) > MAX_UNIX_PATH)
    throw new EtceteraError('ERR_INVALID_ARGUMENT', {
      detail: `the unix socket path ${path} is longer than ${MAX_UNIX_PATH} bytes`,
    });
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // The folder may be in a shared place (a temporary dir): it must be this user's own.
  const st = await lstat(dir);
  if (!st.isDirectory() || (process.getuid !== undefined && st.uid !== process.getuid()))
    throw new EtceteraError('ERR_INVALID_ARGUMENT', {
      detail: `${dir} is not a folder of this user's: the unix socket is not made there`,
    });
  await chmod(dir, 0o700);
  await rm(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  await chmod(path, 0o600);
}

export const DEFAULT_CLIENT_LIMITS: ClientLimits = {
  maxConnections: 10_000,
  readHeaderTimeoutMs: 10_000,
};

/** The connections open over all the listeners of one member. */
interface ConnectionCount {
  open: number;
}

/** Listening client servers; `urls` are the bound addresses (port 0 resolved). */
export class ClientListeners {
  private constructor(
    private readonly listeners: Listener[],
    readonly urls: URL[],
    private readonly face: ClientFace,
  ) {}

  static async open(
    face: ClientFace,
    listenUrls: URL[],
    options: ListenOptions = DEFAULT_CLIENT_LIMITS,
  ): Promise<ClientListeners> {
    const listeners: Listener[] = [];
    const urls: URL[] = [];
    const count: ConnectionCount = { open: 0 };
    try {
      for (const u of listenUrls) {
        if (u.protocol === 'https:' && options.tls === undefined)
          throw new EtceteraError('ERR_INVALID_ARGUMENT', {
            detail: `${u.href} needs a certificate (--cert-file and --key-file, or --auto-tls)`,
          });
        const l =
          u.protocol === 'https:' && options.tls !== undefined
            ? tlsListener(face, options.tls, options, count)
            : listener(face, options, count);
        listeners.push(l);
        const a = await listen(l.net, u);
        const bound = new URL(u.href);
        bound.port = String(a.port);
        urls.push(bound);
      }
      if (options.unixSocket !== undefined) {
        const l = listener(face, options, count);
        listeners.push(l);
        await listenUnix(l.net, options.unixSocket);
      }
    } catch (e) {
      await Promise.all(listeners.map(closeListener));
      throw e;
    }
    return new ClientListeners(listeners, urls, face);
  }

  /** Stops accepting, ends open connections (watch streams and gRPC calls included). */
  async close(): Promise<void> {
    // The face first, so open watch streams end with a proper close, then the sockets.
    await this.face.close?.();
    await Promise.all(this.listeners.map(closeListener));
  }
}

/**
 * Takes a new connection under the limits: closed at once when `maxConnections` are open,
 * else counted until it closes, without Nagle, and given `readHeaderTimeoutMs` for its first
 * bytes. Returns that timer (the caller clears it once the bytes came), or undefined when
 * the connection was refused.
 */
function admit(
  socket: Socket,
  limits: ClientLimits,
  count: ConnectionCount,
  sockets: Set<Socket>,
): NodeJS.Timeout | undefined {
  if (count.open >= limits.maxConnections) {
    limits.onRefused?.();
    socket.destroy();
    return undefined;
  }
  count.open++;
  // No Nagle, as etcd's listeners: an answer may leave in several small writes, and Nagle
  // would hold the later ones until the client acknowledges the first. An HTTP/1 server
  // sets this only on connections it accepts itself, not on the ones handed to it here.
  socket.setNoDelay(true);
  sockets.add(socket);
  const firstBytes = setTimeout(() => {
    limits.onTimedOut?.('header');
    socket.destroy();
  }, limits.readHeaderTimeoutMs);
  firstBytes.unref();
  socket.once('close', () => {
    count.open--;
    sockets.delete(socket);
    clearTimeout(firstBytes);
  });
  return firstBytes;
}

function listener(face: ClientFace, limits: ClientLimits, count: ConnectionCount): Listener {
  const headerMs = limits.readHeaderTimeoutMs;
  const http = createServer(
    {
      headersTimeout: headerMs,
      requestTimeout: 0,
      // How often node:http looks for expired headers: a fraction of the timeout.
      connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(headerMs / 4))),
    },
    face.handler,
  );
  // node:http checks headersTimeout only from its 'listening' event on, and this server never
  // listens itself (the net server below hands it connections): start the checks now.
  http.emit('listening');
  if (face.upgrade !== undefined) http.on('upgrade', face.upgrade);
  else http.on('upgrade', (_req, socket: Duplex) => socket.destroy());
  const sockets = new Set<Socket>();
  const net = createNetServer({ pauseOnConnect: false }, (socket) => {
    const firstBytes = admit(socket, limits, count, sockets);
    if (firstBytes === undefined) return;
    // Until a server owns it, an error (a reset during the sniff) must not go unhandled.
    const onError = () => socket.destroy();
    socket.on('error', onError);
    sniffProtocol(socket, (protocol, head) => {
      clearTimeout(firstBytes);
      socket.off('error', onError);
      if (protocol === 'h2c' && face.grpc !== undefined) toH2c(face.grpc, socket, head, limits);
      else toHttp1(http, socket, head);
    });
  });
  return { net, http, sockets };
}

/** Go's answer to plaintext HTTP on a TLS port, which etcd's clients print as they get it. */
const PLAINTEXT_ON_TLS =
  'HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n' +
  'Client sent an HTTP request to an HTTPS server.\n';

/** The first byte of a TLS record carrying a handshake message (RFC 8446 §5.1). */
const TLS_HANDSHAKE = 0x16;

/** How long a TLS handshake may take before the connection is dropped. */
const TLS_HANDSHAKE_MS = 10_000;

/**
 * The ALPN choice: HTTP/1.1 whenever the client offers it (browsers, curl and Node's https:
 * the JSON API and websockets are HTTP/1.1 only), else h2 (gRPC clients offer nothing
 * else). A client offering neither gets no protocol, and the handshake fails.
 */
export function chooseAlpn(offered: readonly string[]): string | undefined {
  if (offered.includes('http/1.1')) return 'http/1.1';
  return offered.includes('h2') ? 'h2' : undefined;
}

/** A listener for an https:// URL: TLS first, then gRPC or HTTP/1.1 by ALPN. */
function tlsListener(
  face: ClientFace,
  tls: LoadedTls,
  options: ListenOptions,
  count: ConnectionCount,
): Listener {
  const logger = options.logger;
  const plain = listener(face, options, count);
  const { http, sockets } = plain;
  const tlsServer = createTlsServer({
    ...tls.server,
    ALPNCallback: ({ protocols }) => chooseAlpn(protocols),
    handshakeTimeout: TLS_HANDSHAKE_MS,
  });
  tlsServer.on('secureConnection', (socket: TLSSocket) => {
    recordCertIdentity(socket, tls);
    const onError = () => socket.destroy();
    socket.on('error', onError);
    if (socket.alpnProtocol === 'h2' && face.grpc !== undefined) {
      socket.off('error', onError);
      return toH2c(face.grpc, socket as unknown as Socket, Buffer.alloc(0), options);
    }
    socket.off('error', onError);
    http.emit('connection', socket);
  });
  tlsServer.on('tlsClientError', (e: Error) =>
    logger?.debug({ err: e.message }, 'a client TLS handshake failed'),
  );
  const net = createNetServer({ pauseOnConnect: false }, (socket) => {
    // The same limits as a plaintext port: connections counted, first bytes on time.
    const firstBytes = admit(socket, options, count, sockets);
    if (firstBytes === undefined) return;
    socket.on('error', () => socket.destroy());
    socket.once('data', (head: Buffer) => {
      clearTimeout(firstBytes);
      socket.pause();
      if (head[0] !== TLS_HANDSHAKE) {
        socket.end(PLAINTEXT_ON_TLS);
        return;
      }
      // Handed over as the socket itself, so the TLS socket keeps its address (logs, the
      // audit log); node:tls first takes what the socket has buffered, the bytes read here.
      socket.unshift(head);
      tlsServer.emit('connection', socket);
    });
  });
  return { net, http, sockets, tls: tlsServer };
}

function closeListener(l: Listener): Promise<void> {
  return new Promise((resolve) => {
    l.net.close(() => resolve());
    l.http.close(); // stops its header checks (it never listened, so nothing else to close)
    l.http.closeAllConnections();
    for (const s of l.sockets) s.destroy();
  });
}
