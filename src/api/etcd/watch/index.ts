/**
 * etcd's watch stream over HTTP and websockets, framework-free: handlers to mount at /v3/watch.
 *
 * - HTTP (what etcd 3.4's grpc-gateway serves): POST /v3/watch, the body a sequence of JSON
 *   WatchRequest objects (`{"create_request":{...}}`, usually just one; a client may keep the
 *   body open and send more), the response newline-delimited `{"result":{...}}` objects for as
 *   long as the client stays.
 * - Websocket: each message one WatchRequest; each response one message (no newline). Many
 *   watches per socket, created, cancelled and asked for progress at any time.
 *
 * Both run an {@link EtcdWatchSession} over the watch cache: responses are encoded once per
 * batch for every stream (one shared {@link EtcdJsonFormat}), each stream's writes are
 * coalesced to one socket write per flush (cork/uncork around them), and the answers to a
 * stream's requests leave in request order. Over HTTP each response is exactly one chunk
 * (its JSON and a newline), as etcd's gateway writes it; at most `maxWatchesPerStream`
 * watches per stream (one more create is refused in-stream with ERR_WATCH_LIMIT's text).
 *
 * Request fields follow the gateway's JSON mapping (src/api/etcd/wire.ts): bytes as base64,
 * int64 as numbers or strings, enums by name or number, proto or JSON field names, null as
 * unset. A field etcd does not know is refused (ERR_UNKNOWN_FIELD), as the rest of the JSON API
 * does. A WatchRequest with none of the three requests is ignored, as etcd ignores it.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import type { WebSocket } from 'ws';
import { EtceteraError } from '../errors.js';
import type { Cacher } from '../watchcache/cacher.js';
import {
  type EtcdFrame,
  type EtcdHeaderFields,
  EtcdJsonFormat,
} from '../watchcache/encoders/etcd-json.js';
import { type EtcdCreateRequest, EtcdWatchSession } from '../watchcache/etcd-session.js';
import type { FrameSink, WatchFilter } from '../watchcache/types.js';
import { badField, decodeBytes, decodeEnum, decodeInt64 } from './etcd/wire.js';
import { sendError, streamErrorChunk } from './respond.js';

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
}

export interface EtcdWatchHandlers {
  /** POST /v3/watch. */
  http(req: IncomingMessage, res: ServerResponse): void;
  /** A websocket accepted on /v3/watch; `req` is the upgrade request (its socket is corked). */
  websocket(ws: WebSocket, req: IncomingMessage): void;
  /** The shared encoder (one per server, so every stream shares encoded bytes). */
  readonly format: EtcdJsonFormat;
}

/** One decoded WatchRequest. */
export type EtcdWatchRequest =
  | { type: 'create'; create: EtcdCreateRequest }
  | { type: 'cancel'; watchId: number }
  | { type: 'progress' }
  | { type: 'none' };

export function createEtcdWatchHandlers(options: EtcdWatchOptions): EtcdWatchHandlers {
  const maxRequestBytes = options.maxRequestBytes ?? 1.5 * 1024 * 1024;
  const fragmentMaxBytes = options.fragmentMaxBytes ?? maxRequestBytes + 512 * 1024;
  const format = new EtcdJsonFormat({ header: options.header, fragmentMaxBytes });
  const sessionOptions = {
    highWaterBytes: options.highWaterBytes,
    maxWatches: options.maxWatchesPerStream,
  };
  return {
    format,
    http(req, res) {
      if (req.method !== 'POST') {
        sendError(res, new EtceteraError('ERR_METHOD_NOT_ALLOWED'));
        return;
      }
      const session = new EtcdWatchSession(options.cacher, format, httpSink(res), sessionOptions);
      const fail = (e: unknown) => {
        session.close();
        if (!res.headersSent) sendError(res, e);
        else res.end(streamErrorChunk(e).text);
        req.destroy();
      };
      const splitter = new JsonSplitter(maxRequestBytes);
      req.on('data', (chunk: Buffer) => {
        try {
          for (const text of splitter.push(chunk)) apply(session, decodeWatchRequest(text));
        } catch (e) {
          fail(e);
        }
      });
      req.on('end', () => {
        if (!splitter.atBoundary())
          fail(new EtceteraError('ERR_MALFORMED_JSON', { detail: 'unexpected end of JSON input' }));
      });
      res.on('close', () => session.close());
      // A client that resets the connection must not crash the server.
      req.on('error', () => session.close());
      res.on('error', () => session.close());
    },
    websocket(ws, req) {
      const socket = req.socket;
      const session = new EtcdWatchSession(
        options.cacher,
        format,
        wsSink(ws, socket),
        sessionOptions,
      );
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        try {
          const text = isBinary ? Buffer.from(data).toString('utf8') : data.toString('utf8');
          if (Buffer.byteLength(text) > maxRequestBytes)
            throw new EtceteraError('ERR_REQUEST_TOO_LARGE');
          apply(session, decodeWatchRequest(text));
        } catch (e) {
          session.close();
          ws.send(streamErrorChunk(e).text.trimEnd());
          ws.close(1007, 'invalid watch request');
        }
      });
      ws.on('close', () => session.close());
      ws.on('error', () => session.close());
    },
  };
}

function apply(session: EtcdWatchSession, r: EtcdWatchRequest): void {
  switch (r.type) {
    case 'create':
      session.create(r.create);
      return;
    case 'cancel':
      session.cancel(r.watchId);
      return;
    case 'progress':
      session.progress();
      return;
    case 'none':
      return;
  }
}

/**
 * Frames to an HTTP response: each response exactly one HTTP chunk (its JSON and a newline),
 * as etcd's gateway writes them; a client that decodes chunk by chunk (Python's etcd3gw) needs
 * that. All of a flush's chunks are corked into one socket write.
 */
function httpSink(res: ServerResponse): FrameSink<EtcdFrame> {
  return {
    write(frames) {
      if (res.writableEnded || res.destroyed) return;
      if (!res.headersSent) {
        res.writeHead(200, {
          'Content-Type': 'application/json',
          'Grpc-Metadata-Content-Type': 'application/grpc',
        });
      }
      res.cork();
      for (const f of frames) res.write(responseLine(f));
      res.uncork();
    },
    bufferedBytes: () => res.writableLength,
    onceDrain: (listener) => res.once('drain', listener),
  };
}

/** One response as one buffer: its chunks and the newline. */
export function responseLine(f: EtcdFrame): Buffer {
  const out = Buffer.allocUnsafe(f.bytes + 1);
  let at = 0;
  for (const c of f.chunks) at += c.copy(out, at);
  out[at] = 0x0a;
  return out;
}

/**
 * Frames to a websocket: one text message each, all of a batch in one socket write. A server's
 * frames are unmasked, so each message is a 2-, 4- or 10-byte header and then its chunks,
 * exactly what ws.send writes, without ws.send's per-message header buffer, concat and two
 * socket writes (the bench's profile of a 5,000-watcher fan-out had a third of the member's CPU
 * there). With an extension negotiated (permessage-deflate) ws frames the messages itself.
 */
function wsSink(ws: WebSocket, socket: Socket): FrameSink<EtcdFrame> {
  return {
    write(frames) {
      if (ws.readyState !== ws.OPEN) return;
      if (ws.extensions !== '') {
        socket.cork();
        for (const f of frames)
          ws.send(f.chunks.length === 1 ? f.chunks[0]! : Buffer.concat(f.chunks as Buffer[]));
        socket.uncork();
        return;
      }
      socket.write(wsTextMessages(frames));
    },
    bufferedBytes: () => ws.bufferedAmount,
    onceDrain: (listener) => socket.once('drain', listener),
  };
}

/** RFC 6455 final, unmasked text frames, one per frame, in one buffer. */
export function wsTextMessages(frames: readonly EtcdFrame[]): Buffer {
  let total = 0;
  for (const f of frames) total += wsHeaderBytes(f.bytes) + f.bytes;
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const f of frames) {
    const n = f.bytes;
    out[at] = 0x81; // FIN, opcode 1 (text)
    if (n < 126) {
      out[at + 1] = n;
    } else if (n < 65_536) {
      out[at + 1] = 126;
      out.writeUInt16BE(n, at + 2);
    } else {
      out[at + 1] = 127;
      out.writeUInt32BE(Math.floor(n / 2 ** 32), at + 2);
      out.writeUInt32BE(n >>> 0, at + 6);
    }
    at += wsHeaderBytes(n);
    for (const c of f.chunks) at += c.copy(out, at);
  }
  return out;
}

function wsHeaderBytes(payloadBytes: number): number {
  return payloadBytes < 126 ? 2 : payloadBytes < 65_536 ? 4 : 10;
}

// --- request decoding ---------------------------------------------------------------------

type Obj = Record<string, unknown>;

const FILTERS = ['NOPUT', 'NODELETE'] as const;
const CREATE_FIELDS = [
  'key',
  'range_end',
  'start_revision',
  'progress_notify',
  'filters',
  'prev_kv',
  'watch_id',
  'fragment',
];

/** One WatchRequest from its JSON text. Throws ERR_MALFORMED_JSON, ERR_BAD_FIELD, ERR_UNKNOWN_FIELD. */
export function decodeWatchRequest(text: string): EtcdWatchRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new EtceteraError('ERR_MALFORMED_JSON', { detail: (e as Error).message }, { cause: e });
  }
  if (body === null) return { type: 'none' };
  const o = object('', body);
  known('', o, ['create_request', 'cancel_request', 'progress_request']);
  const create = field(o, 'create_request');
  if (create !== undefined)
    return { type: 'create', create: decodeCreate(object('create_request', create)) };
  const cancel = field(o, 'cancel_request');
  if (cancel !== undefined) {
    const c = object('cancel_request', cancel);
    known('cancel_request', c, ['watch_id']);
    const id = field(c, 'watch_id');
    return { type: 'cancel', watchId: id === undefined ? 0 : int('cancel_request.watch_id', id) };
  }
  const progress = field(o, 'progress_request');
  if (progress !== undefined) {
    known('progress_request', object('progress_request', progress), []);
    return { type: 'progress' };
  }
  return { type: 'none' };
}

function decodeCreate(c: Obj): EtcdCreateRequest {
  const p = 'create_request';
  known(p, c, CREATE_FIELDS);
  const bytes = (name: string) => {
    const v = field(c, name);
    if (v === undefined) return new Uint8Array(0);
    if (typeof v !== 'string') throw badField(`${p}.${name}`, 'expected base64 bytes');
    return decodeBytes(`${p}.${name}`, v);
  };
  const bool = (name: string) => {
    const v = field(c, name);
    if (v !== undefined && typeof v !== 'boolean')
      throw badField(`${p}.${name}`, 'expected a boolean');
    return v === true;
  };
  const filtersIn = field(c, 'filters');
  if (filtersIn !== undefined && !Array.isArray(filtersIn))
    throw badField(`${p}.filters`, 'expected an array');
  const filters: WatchFilter[] = (filtersIn ?? []).map((f: unknown, i: number) => {
    if (typeof f !== 'string' && typeof f !== 'number')
      throw badField(`${p}.filters[${i}]`, 'expected an enum');
    return decodeEnum(`${p}.filters[${i}]`, f, FILTERS, 'FilterType');
  });
  const start = field(c, 'start_revision');
  const id = field(c, 'watch_id');
  const startRevision = start === undefined ? 0 : int(`${p}.start_revision`, start);
  if (startRevision < 0) throw badField(`${p}.start_revision`, 'must not be negative');
  const rangeEnd = bytes('range_end');
  return {
    key: bytes('key'),
    rangeEnd: rangeEnd.length === 0 ? undefined : rangeEnd,
    startRevision,
    progressNotify: bool('progress_notify'),
    filters,
    prevKv: bool('prev_kv'),
    watchId: id === undefined ? 0 : int(`${p}.watch_id`, id),
    fragment: bool('fragment'),
  };
}

function object(path: string, v: unknown): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw badField(path, 'expected a JSON object');
  return v as Obj;
}

function int(path: string, v: unknown): number {
  if (typeof v !== 'number' && typeof v !== 'string') throw badField(path, 'expected an int64');
  if (typeof v === 'number' && !Number.isInteger(v))
    throw badField(path, `expected an int64, got ${v}`);
  return decodeInt64(path, v);
}

/** protobuf's JSON name (lowerCamelCase) of a proto field name. */
function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase());
}

/** A field by its proto or JSON name; null reads as unset. */
function field(o: Obj, name: string): unknown {
  return o[name] ?? o[camel(name)] ?? undefined;
}

function known(path: string, o: Obj, names: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (names.includes(k) || names.some((n) => camel(n) === k)) continue;
    throw new EtceteraError('ERR_UNKNOWN_FIELD', { detail: `${path ? `${path}.` : ''}${k}` });
  }
}

// --- a body of concatenated JSON objects ---------------------------------------------------

/**
 * Splits a byte stream into top-level JSON values (objects, or `null`), as the gateway reads a
 * client-streaming body: whitespace between them, nothing else. Each value is bounded by
 * `maxBytes` (ERR_REQUEST_TOO_LARGE).
 */
export class JsonSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private buf = '';
  private depth = 0;
  private inString = false;
  private escaped = false;
  private scanned = 0;

  constructor(private readonly maxBytes: number) {}

  /** Whether the input so far ends between values. */
  atBoundary(): boolean {
    return this.depth === 0 && this.buf.trim() === '';
  }

  push(chunk: Buffer): string[] {
    this.buf += this.decoder.write(chunk);
    const out: string[] = [];
    let start = 0;
    let i = this.scanned;
    for (; i < this.buf.length; i++) {
      const ch = this.buf[i]!;
      if (this.depth > 0) {
        if (this.inString) {
          if (this.escaped) this.escaped = false;
          else if (ch === '\\') this.escaped = true;
          else if (ch === '"') this.inString = false;
        } else if (ch === '"') this.inString = true;
        else if (ch === '{' || ch === '[') this.depth++;
        else if ((ch === '}' || ch === ']') && --this.depth === 0) {
          out.push(this.buf.slice(start, i + 1));
          start = i + 1;
        }
        continue;
      }
      // Between values: whitespace, the next object, or `null` (an empty request).
      if (ch === ' ' || ch === '\n' || ch === '\r' || ch === '\t') start = i + 1;
      else if (ch === '{') {
        start = i;
        this.depth = 1;
      } else if (this.buf.startsWith('null', i)) {
        out.push('null');
        i += 3;
        start = i + 1;
      } else if ('null'.startsWith(this.buf.slice(i)))
        break; // the rest may come next chunk
      else {
        throw new EtceteraError('ERR_MALFORMED_JSON', {
          detail: `invalid character ${JSON.stringify(ch)} looking for beginning of value`,
        });
      }
    }
    this.buf = this.buf.slice(start);
    this.scanned = this.depth > 0 ? i - start : 0;
    if (Buffer.byteLength(this.buf) > this.maxBytes)
      throw new EtceteraError('ERR_REQUEST_TOO_LARGE');
    return out;
  }
}

export type { EtcdHeaderFields };
