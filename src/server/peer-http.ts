/**
 * The peer listener (--listen-peer-urls): what members ask of each other.
 *
 *   upgrade /raft                    the Raft transport's websocket streams
 *   GET  /members                    the registry (a joining member learns its ID and peers)
 *   POST /leases/keepalive {id}      a follower forwards a keepalive to the leader
 *   POST /leases/timetolive {id, keys}
 *   GET  /version
 *   GET  /hashkv?revision=N          the keyspace hash at N (the corruption check), members
 *                                    only: the asker names itself in x-etcetera-member-id
 *                                    and the cluster in x-etcetera-cluster-id
 *
 * Lease requests must reach the leader: a member that is not the leader answers 409, and
 * the forwarding member looks up the new leader and tries again. Bodies are small JSON; IDs
 * travel as decimal strings.
 *
 * An https:// peer URL serves all of it over TLS (--peer-cert-file/--peer-key-file or
 * --peer-auto-tls, src/server/tls.ts); with --peer-client-cert-auth the handshake itself
 * refuses a peer without a certificate signed by --peer-trusted-ca-file, so such a process
 * can neither open a Raft stream nor ask anything else; with --peer-cert-allowed-cn or
 * --peer-cert-allowed-hostname a certificate of that CA must also have the allowed CN or
 * host name (src/server/peer-cert.ts), else every request and stream is answered 403. The
 * asking side below dials https:// peers with the member's peer certificate.
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo, Server as NetServer } from 'node:net';
import type { TlsOptions } from 'node:tls';
import { isEtceteraError } from '../errors.js';
import type { RaftTransport } from '../raft/driver/transport.js';
import type { KeyspaceHash } from '../store/hash.js';
import type { LeaseId, LeaseTimeToLive } from '../store/types.js';
import { type PeerCertRule, socketRefusal } from './peer-cert.js';
import type { ClusterRecord } from './registry.js';
import type { DialTls } from './tls.js';

export interface PeerHandlers {
  cluster(): ClusterRecord;
  /** Undefined when this member is not the leader. */
  keepAlive(id: LeaseId): Promise<number> | undefined;
  timeToLive(id: LeaseId, keys: boolean): Promise<LeaseTimeToLive> | undefined;
  version(): Record<string, string>;
  /** Whether `id` (decimal) is a current member of cluster `clusterId`. */
  isMember(id: string, clusterId: string): boolean;
  /** The hash at `revision`, once this member has applied it (waits a little). */
  hashKV(revision: number): Promise<KeyspaceHash>;
}

/** A peer's answer to GET /hashkv. */
export type PeerHash =
  | { kind: 'hash'; hash: number; revision: number; compactRevision: number }
  | { kind: 'error'; code: string };

const MAX_BODY = 64 * 1024;

/**
 * The peer server: plain HTTP, or HTTPS with `tls` (an https:// peer URL). With `allowed`
 * (--peer-cert-allowed-cn / -hostname) a peer whose certificate the rule does not allow gets
 * 403 for every request and Raft stream, before anything is read or handled.
 */
export function createPeerServer(
  transport: RaftTransport,
  h: PeerHandlers,
  tls?: TlsOptions,
  allowed?: PeerCertRule,
): Server {
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const refused = socketRefusal(allowed, req.socket);
    if (refused !== undefined) return reply(res, 403, { error: refused });
    void handle(req, res, h).catch((e: unknown) => reply(res, 500, { error: String(e) }));
  };
  const server: Server =
    tls === undefined ? createServer(onRequest) : createHttpsServer(tls, onRequest);
  server.on('upgrade', (req, socket, head) => {
    const refused = socketRefusal(allowed, req.socket);
    if (refused !== undefined) {
      const body = JSON.stringify({ error: refused });
      socket.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    if (!transport.handleUpgrade(req, socket, head)) socket.destroy();
  });
  return server;
}

async function handle(req: IncomingMessage, res: ServerResponse, h: PeerHandlers): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  if (req.method === 'GET' && path === '/members') return reply(res, 200, h.cluster());
  if (req.method === 'GET' && path === '/version') return reply(res, 200, h.version());
  if (req.method === 'GET' && path === '/hashkv') return hashKV(req, res, h);
  if (req.method === 'POST' && (path === '/leases/keepalive' || path === '/leases/timetolive')) {
    const body = (await readJson(req)) as { id?: unknown; keys?: unknown } | undefined;
    const id = Number(body?.id);
    if (!Number.isSafeInteger(id) || id < 0) return reply(res, 400, { error: 'bad lease id' });
    if (path === '/leases/keepalive') {
      const ttl = await h.keepAlive(id as LeaseId);
      return ttl === undefined
        ? reply(res, 409, { error: 'not leader' })
        : reply(res, 200, { ttl });
    }
    const t = await h.timeToLive(id as LeaseId, body?.keys === true);
    if (t === undefined) return reply(res, 409, { error: 'not leader' });
    const keys = t.keys.map((k) => Buffer.from(k).toString('base64'));
    return reply(res, 200, { ttl: t.ttl, grantedTtl: t.grantedTtl, keys });
  }
  reply(res, 404, { error: 'not found' });
}

async function hashKV(req: IncomingMessage, res: ServerResponse, h: PeerHandlers): Promise<void> {
  const from = String(req.headers['x-etcetera-member-id'] ?? '');
  const cluster = String(req.headers['x-etcetera-cluster-id'] ?? '');
  if (!h.isMember(from, cluster)) return reply(res, 403, { error: 'members only' });
  const text = new URL(req.url ?? '/', 'http://x').searchParams.get('revision') ?? '0';
  const revision = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(revision))
    return reply(res, 400, { error: 'bad revision' });
  try {
    const r = await h.hashKV(revision);
    return reply(res, 200, {
      hash: r.hash,
      revision: r.revision,
      compactRevision: r.compactRevision,
    });
  } catch (e) {
    if (!isEtceteraError(e)) throw e;
    return reply(res, 409, { code: e.code });
  }
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return undefined;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Listens on a URL's host and port (port 0: any free port); resolves with the bound address. */
export function listen(server: NetServer, url: URL): Promise<AddressInfo> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port === '' ? 80 : Number(url.port);
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

// --- the asking side ---

const PEER_TIMEOUT_MS = 2000;

interface PeerReply {
  status: number;
  ok: boolean;
  json(): unknown;
}

/**
 * One small request to a peer over http:// or https:// (with `tls`: the member's peer
 * certificate, the peer CA). Rejects on a network or TLS error and after `timeoutMs`.
 */
function peerRequest(
  url: URL,
  init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs: number },
  tls: DialTls | undefined,
): Promise<PeerReply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...init.headers };
    if (init.body !== undefined) headers['content-length'] = Buffer.byteLength(init.body);
    const options = { method: init.method ?? 'GET', headers, timeout: init.timeoutMs };
    const onResponse = (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY * 16) req.destroy(new Error('peer answer too large'));
        else chunks.push(c);
      });
      res.on('error', reject);
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status, ok: status >= 200 && status < 300, json: () => JSON.parse(text) });
      });
    };
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, { ...options, ...tls }, onResponse)
        : httpRequest(url, options, onResponse);
    req.on('timeout', () => req.destroy(new Error('peer request timed out')));
    req.on('error', reject);
    req.end(init.body);
  });
}

/** GET a peer's /members; undefined when it does not answer. */
export async function fetchCluster(
  peerUrl: string,
  tls?: DialTls,
): Promise<ClusterRecord | undefined> {
  try {
    const res = await peerRequest(
      new URL('/members', peerUrl),
      { timeoutMs: PEER_TIMEOUT_MS },
      tls,
    );
    if (!res.ok) return undefined;
    return res.json() as ClusterRecord;
  } catch {
    return undefined;
  }
}

/** POSTs a lease request to a peer; `undefined` when it is not the leader or unreachable. */
export async function forwardLease(
  peerUrl: string,
  path: '/leases/keepalive' | '/leases/timetolive',
  body: { id: string; keys?: boolean },
  timeoutMs: number,
  tls?: DialTls,
): Promise<Record<string, unknown> | undefined> {
  try {
    const res = await peerRequest(
      new URL(path, peerUrl),
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        timeoutMs: Math.min(timeoutMs, PEER_TIMEOUT_MS),
      },
      tls,
    );
    if (!res.ok) return undefined;
    return res.json() as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** GET a peer's /hashkv at `revision`; undefined when it does not answer or refuses us. */
export async function fetchPeerHash(
  peerUrl: string,
  revision: number,
  selfId: unknown,
  clusterId: string,
  tls?: DialTls,
): Promise<PeerHash | undefined> {
  try {
    const url = new URL('/hashkv', peerUrl);
    url.searchParams.set('revision', String(revision));
    const res = await peerRequest(
      url,
      {
        headers: { 'x-etcetera-member-id': String(selfId), 'x-etcetera-cluster-id': clusterId },
        timeoutMs: PEER_TIMEOUT_MS * 3,
      },
      tls,
    );
    const body = res.json() as Record<string, unknown>;
    if (res.status === 409) return { kind: 'error', code: String(body.code) };
    if (!res.ok) return undefined;
    return {
      kind: 'hash',
      hash: Number(body.hash),
      revision: Number(body.revision),
      compactRevision: Number(body.compactRevision),
    };
  } catch {
    return undefined;
  }
}
