/**
 * etcd's watch stream over HTTP and websockets, framework-free: handlers to mount at /v3/watch.
 *
 * - HTTP (`http.ts`, what etcd 3.4's grpc-gateway serves): POST /v3/watch, the body a sequence
 *   of JSON WatchRequest objects, the response newline-delimited `{"result":{...}}` objects.
 * - Websocket (`ws.ts`): each message one WatchRequest; each response one message.
 *
 * Both run an EtcdWatchSession over the watch cache (`session.ts`): responses are encoded once
 * per batch for every stream (one shared {@link EtcdJsonFormat}), each stream's writes are
 * coalesced to one socket write per flush (`sink.ts`, with the wire bytes from `frames.ts`),
 * and the answers to a stream's requests leave in request order. Over HTTP each response is
 * exactly one chunk (its JSON and a newline), as etcd's gateway writes it; at most
 * `maxWatchesPerStream` watches per stream (one more create is refused in-stream with
 * ERR_WATCH_LIMIT's text).
 *
 * Requests (`decode.ts`, the HTTP body split by `body.ts`) follow the gateway's JSON mapping
 * (src/api/etcd/wire.ts) and are decoded by the JSON API's decoders (src/api/etcd/decode.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebSocket } from 'ws';
import type { Cacher } from '../../../watchcache/cacher.js';
import { type EtcdHeaderFields, EtcdJsonFormat } from '../../../watchcache/encoders/etcd-json.js';
import { serveHttpWatch } from './http.js';
import type { WatchStreamContext } from './session.js';
import { serveWsWatch } from './ws.js';

export interface EtcdWatchOptions {
  cacher: Cacher;
  /** cluster_id, member_id and raft_term of every response header. Default: all omitted. */
  header?: () => EtcdHeaderFields;
  /** Largest WatchRequest accepted. Default 1.5 MiB, as etcd's --max-request-bytes. */
  maxRequestBytes?: number;
  /**
   * A `fragment` watch splits a revision's events into responses under this many bytes (of
   * JSON). Default maxRequestBytes + 512 KiB, etcd's limit (which it measures in protobuf).
   */
  fragmentMaxBytes?: number;
  /** A stream stops taking frames while its socket holds this much. Default 256 KiB. */
  highWaterBytes?: number;
  /** Most watches on one stream; one more create is refused (ERR_WATCH_LIMIT). Default 10,000. */
  maxWatchesPerStream?: number;
  /** Who may watch what (the member's auth); absent: every watch is permitted. */
  authorize?: WatchStreamContext['authorize'];
}

export interface EtcdWatchHandlers {
  /** POST /v3/watch. */
  http(req: IncomingMessage, res: ServerResponse): void;
  /** A websocket accepted on /v3/watch; `req` is the upgrade request (its socket is corked). */
  websocket(ws: WebSocket, req: IncomingMessage): void;
  /** The shared encoder (one per server, so every stream shares encoded bytes). */
  readonly format: EtcdJsonFormat;
}

export function createEtcdWatchHandlers(options: EtcdWatchOptions): EtcdWatchHandlers {
  const maxRequestBytes = options.maxRequestBytes ?? 1.5 * 1024 * 1024;
  const fragmentMaxBytes = options.fragmentMaxBytes ?? maxRequestBytes + 512 * 1024;
  const format = new EtcdJsonFormat({ header: options.header, fragmentMaxBytes });
  const ctx: WatchStreamContext = {
    cacher: options.cacher,
    format,
    session: { highWaterBytes: options.highWaterBytes, maxWatches: options.maxWatchesPerStream },
    maxRequestBytes,
    authorize: options.authorize,
  };
  return {
    format,
    http: (req, res) => serveHttpWatch(ctx, req, res),
    websocket: (ws, req) => serveWsWatch(ctx, ws, req),
  };
}

export type { EtcdWatchRequest } from './session.js';
export type { EtcdHeaderFields };
