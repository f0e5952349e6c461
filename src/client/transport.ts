/**
 * HTTP transport of the client: JSON POSTs over kept-alive connections (node:http agents),
 * with failover between endpoints.
 *
 * Retry rule: a request is sent again, to the next endpoint, only when it certainly did not
 * reach a server (connection refused, or a kept-alive socket the server had already closed,
 * which Node reports as ECONNRESET on a reused socket), or when it is a read. A write that
 * may have arrived is never repeated: the caller gets the error and decides.
 */
import http from 'node:http';
import https from 'node:https';
import type { ErrorBodyJson, StreamErrorJson } from '../wire/etcd-json.js';
import { ClientError, transportError } from './errors.js';

export interface TransportOptions {
  /** Client URLs, e.g. http://127.0.0.1:2379 (a bare host:port means http). */
  endpoints: string[];
  /** Per-request timeout in ms. Default 30 s. */
  timeoutMs?: number;
  /** Connections per endpoint. Default 256. */
  maxSockets?: number;
  /**
   * TLS for https:// endpoints (PEM text): the CA that signed the server's certificate
   * (etcdctl's --cacert), and a client certificate and key (--cert, --key) for members
   * running with --client-cert-auth. Default: the system CAs, no client certificate.
   */
  tls?: ClientTls;
}

export interface ClientTls {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
}

export interface Endpoint {
  url: URL;
  agent: http.Agent;
}

export type Json = Record<string, unknown>;

export function parseEndpoint(s: string): URL {
  // `unix:/path` (a unix socket, gRPC only): kept as it is, the path in `pathname`.
  return new URL(/^[a-z]+:\/\/|^unix:\//i.test(s) ? s : `http://${s}`);
}

export class Transport {
  readonly endpoints: Endpoint[];
  readonly timeoutMs: number;
  private current = 0;

  constructor(o: TransportOptions) {
    if (o.endpoints.length === 0) throw new TypeError('at least one endpoint is needed');
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.endpoints = o.endpoints.map((e) => {
      const url = parseEndpoint(e);
      const base = { keepAlive: true, maxSockets: o.maxSockets ?? 256 };
      const agent =
        url.protocol === 'https:'
          ? new https.Agent({ ...base, ...o.tls, minVersion: 'TLSv1.2' })
          : new http.Agent(base);
      return { url, agent };
    });
  }

  /** The endpoint requests go to now (the next one after a failover). */
  get endpoint(): Endpoint {
    return this.endpoints[this.current % this.endpoints.length] as Endpoint;
  }

  /** POSTs `body` to `path`; resolves with the JSON answer, rejects with ClientError. */
  async post(path: string, body: Json, read = false): Promise<Json> {
    const text = JSON.stringify(body);
    let lastError: unknown;
    for (let attempt = 0; attempt <= this.endpoints.length; attempt++) {
      const endpoint = this.endpoint;
      try {
        return await this.once(endpoint, path, text);
      } catch (e) {
        if (!(e instanceof SendError)) throw e;
        lastError = e.cause;
        if (!(e.notDelivered || read)) break;
        if (!e.reused) this.current++;
      }
    }
    throw transportError(`request to ${path} failed: ${describe(lastError)}`, lastError);
  }

  /** GETs a plain JSON route (/health, /version) from the current endpoint. */
  get(path: string): Promise<{ status: number; body: Json }> {
    const { url, agent } = this.endpoint;
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.get({ agent, hostname: url.hostname, port: url.port, path }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
            resolve({ status: res.statusCode ?? 0, body });
          } catch (e) {
            reject(transportError(`unreadable answer from ${path}`, e));
          }
        });
      });
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error('timed out')));
      req.on('error', (e) => reject(transportError(`GET ${path} failed: ${describe(e)}`, e)));
    });
  }

  /** Opens a streaming POST; the caller reads and ends the response. */
  stream(path: string, body: Json): http.ClientRequest {
    const { url, agent } = this.endpoint;
    const text = JSON.stringify(body);
    const req = request(url, agent, path, text);
    req.end(text);
    return req;
  }

  /** Moves to the next endpoint (a watch that lost its connection calls it). */
  failover(): void {
    this.current++;
  }

  close(): void {
    for (const e of this.endpoints) e.agent.destroy();
  }

  private once(endpoint: Endpoint, path: string, text: string): Promise<Json> {
    return new Promise((resolve, reject) => {
      const req = request(endpoint.url, endpoint.agent, path, text);
      req.setTimeout(this.timeoutMs, () =>
        req.destroy(transportError(`request to ${path} timed out`, undefined)),
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err instanceof ClientError) return reject(err);
        const code = err.code ?? '';
        const reused = req.reusedSocket && code === 'ECONNRESET';
        reject(new SendError(err, code === 'ECONNREFUSED' || reused, reused));
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => reject(new SendError(err, false, false)));
        res.on('end', () => {
          try {
            resolve(answer(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
          } catch (e) {
            reject(e);
          }
        });
      });
      req.end(text);
    });
  }
}

function request(url: URL, agent: http.Agent, path: string, text: string): http.ClientRequest {
  const mod = url.protocol === 'https:' ? https : http;
  return mod.request({
    agent,
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port,
    method: 'POST',
    path,
    headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) },
  });
}

/** A failure to get any answer, with whether the request certainly never arrived. */
class SendError extends Error {
  constructor(
    override readonly cause: unknown,
    readonly notDelivered: boolean,
    readonly reused: boolean,
  ) {
    super(describe(cause));
  }
}

function describe(e: unknown): string {
  return e instanceof Error
    ? `${(e as NodeJS.ErrnoException).code ?? e.name}: ${e.message}`
    : String(e);
}

/**
 * Reads an answer: a JSON message, a one-message gateway stream (`{"result": ...}`), or an
 * error in either of etcd's two forms.
 */
export function answer(status: number, text: string): Json {
  let body: Json;
  try {
    body = JSON.parse(text.trim().split('\n')[0] ?? '') as Json;
  } catch {
    throw new ClientError(`unreadable answer (HTTP ${status}): ${text.slice(0, 200)}`, 2, status);
  }
  const err = body.error;
  if (err !== undefined && typeof err === 'object' && err !== null) {
    const e = err as Partial<StreamErrorJson>;
    throw new ClientError(e.message ?? 'stream error', e.grpc_code ?? 2, e.http_code ?? status);
  }
  if (status !== 200 || typeof err === 'string') {
    const e = body as Partial<ErrorBodyJson>;
    const message = String(e.message ?? e.error ?? `HTTP ${status}`);
    throw new ClientError(message, typeof e.code === 'number' ? e.code : 2, status);
  }
  return (body.result as Json | undefined) ?? body;
}
