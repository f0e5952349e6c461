/**
 * Who may talk to a member over HTTP: the checks that keep web pages out of the store.
 *
 * A browser attaches `Origin` to every cross-origin request (and to websocket handshakes),
 * and a page that rebinds its own DNS name to 127.0.0.1 still sends its name as `Host`. Both
 * faces on the client port (etcd's JSON API and the Kubernetes API) are therefore guarded by
 * two checks that run before any route, websocket upgrades included:
 *
 * - Host: an IP address (IPv4 or bracketed IPv6), `localhost`, a host of the member's listen
 *   or advertised client URLs, or a name listed in `--host-whitelist` (`*` allows any).
 *   DNS rebinding needs a DNS name pointed at the member, and such a name is none of these.
 * - Origin: absent (curl, etcd clients, kubectl, client libraries), the member's own origin
 *   (`http://` + the Host just checked), or listed in `--cors` (`*` allows any). Anything else
 *   is refused, so a page elsewhere can neither write (a `text/plain` POST needs no preflight)
 *   nor read.
 *
 * Allowed cross-origin requests get CORS headers (and preflights an answer) from the `cors`
 * middleware; with no `--cors` no CORS header is sent. etcd 3.4 answers every origin with
 * `Access-Control-Allow-Origin: *` and accepts any Host by default; etcetera is stricter.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import cors from 'cors';
import type { RequestHandler } from 'express';
import { EtceteraError } from '../errors.js';
import { isKubernetesPath } from './k8s/paths.js';
import { errorReply } from './respond.js';

export interface AccessOptions {
  /** Origins allowed to call from a browser (`--cors`); `*` allows any. Default: none. */
  corsOrigins?: readonly string[];
  /** Host names accepted besides the built-in ones (`--host-whitelist`); `*` allows any. */
  hostWhitelist?: readonly string[];
  /** The hosts of the member's listen and advertised client URLs. */
  clientHosts?: readonly string[];
}

/** Methods and headers a preflight allows: the etcd gateway's, and PATCH for Kubernetes. */
const CORS_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const CORS_HEADERS = ['accept', 'content-type', 'authorization'];

/** An origin as browsers send it: scheme://host[:port], lower case, no path. */
export function normalizeOrigin(origin: string): string {
  return origin.trim().toLowerCase().replace(/\/+$/, '');
}

/** The host name of a Host header value, without port; IPv6 keeps its brackets. */
export function hostnameOf(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end === -1 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

function isIpLiteral(hostname: string): boolean {
  if (hostname.startsWith('[') && hostname.endsWith(']')) return isIP(hostname.slice(1, -1)) === 6;
  return isIP(hostname) === 4;
}

export class AccessPolicy {
  private readonly anyOrigin: boolean;
  private readonly origins: ReadonlySet<string>;
  private readonly anyHost: boolean;
  private readonly hosts: ReadonlySet<string>;
  /** The `cors` middleware for allowed cross-origin requests, when any origin is listed. */
  readonly cors: RequestHandler | undefined;

  constructor(options: AccessOptions = {}) {
    const origins = (options.corsOrigins ?? []).map(normalizeOrigin).filter((o) => o !== '');
    this.anyOrigin = origins.includes('*');
    this.origins = new Set(origins);
    const listed = (options.hostWhitelist ?? []).map((h) => h.trim().toLowerCase());
    this.anyHost = listed.includes('*');
    this.hosts = new Set(
      ['localhost', ...listed, ...(options.clientHosts ?? [])].map((h) => hostnameOf(h)),
    );
    this.cors =
      origins.length === 0
        ? undefined
        : cors({
            // Refused origins never get here; an allowed one is echoed (or `*` for any).
            origin: this.anyOrigin ? '*' : true,
            methods: CORS_METHODS,
            allowedHeaders: CORS_HEADERS,
            optionsSuccessStatus: 200,
          });
  }

  /** Why `req` is refused, or undefined when it may proceed. */
  refusal(req: IncomingMessage): EtceteraError | undefined {
    const host = req.headers.host;
    if (host !== undefined && !this.anyHost) {
      const name = hostnameOf(host);
      if (!isIpLiteral(name) && !this.hosts.has(name)) {
        return new EtceteraError('ERR_HOST_NOT_ALLOWED', { detail: JSON.stringify(host) });
      }
    }
    const origin = req.headers.origin;
    if (origin === undefined || this.anyOrigin) return undefined;
    const o = normalizeOrigin(origin);
    if (this.origins.has(o)) return undefined;
    if (host !== undefined && o === `http://${host.trim().toLowerCase()}`) return undefined;
    return new EtceteraError('ERR_ORIGIN_NOT_ALLOWED', { detail: JSON.stringify(origin) });
  }

  /** Express middleware: refuses, then adds CORS headers for allowed cross-origin requests. */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const err = this.refusal(req);
      if (err !== undefined) return sendRefusal(req, res, err);
      if (this.cors !== undefined && req.headers.origin !== undefined)
        return this.cors(req, res, next);
      next();
    };
  }

  /** For the 'upgrade' event: true when it refused (and closed) the socket. */
  refuseUpgrade(req: IncomingMessage, socket: Duplex): boolean {
    const err = this.refusal(req);
    if (err === undefined) return false;
    const { status, text } = refusalBody(req, err);
    socket.end(
      `HTTP/1.1 ${status} Forbidden\r\nConnection: close\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
    );
    return true;
  }
}

/** The refusal in the form of the face the path belongs to: a Kubernetes Status or etcd's. */
function refusalBody(req: IncomingMessage, err: EtceteraError): { status: number; text: string } {
  const { status, body } = errorReply(err);
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  if (!isKubernetesPath(path)) return { status, text: JSON.stringify(body) };
  const kube = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: err.message,
    reason: 'Forbidden',
    code: status,
  };
  return { status, text: JSON.stringify(kube) };
}

function sendRefusal(req: IncomingMessage, res: ServerResponse, err: EtceteraError): void {
  const { status, text } = refusalBody(req, err);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    // The body was not read: do not let its bytes be taken for the next request.
    Connection: 'close',
  });
  res.end(text);
}
