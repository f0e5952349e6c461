/**
 * gRPC transport of the client (@grpc/grpc-js over etcd's .proto files in src/wire): one
 * channel per endpoint, failover between endpoints, one bidi Watch stream carrying every
 * watch of the client (grpc-watch.ts), one bidi LeaseKeepAlive stream for all renewals.
 *
 * Messages are converted with etcd's field names, int64 as decimal strings, bytes as base64
 * and enums by name (see wire.ts): the same shapes as the JSON gateway, so the codec is
 * shared. Snapshot chunks alone come as raw bytes.
 *
 * Retry rule (as transport.ts's): a call is sent again, to the next endpoint, only when it
 * certainly did not reach a server — grpc-js found no connection ("No connection
 * established") or the server refused the stream before reading it (REFUSED_STREAM) — or
 * when it is a read. A write that may have arrived is never repeated.
 */
import {
  type CallOptions,
  type ChannelCredentials,
  type ClientDuplexStream,
  credentials,
  Client as GrpcClient,
  Metadata,
  type MethodDefinition,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { GrpcCode } from '../errors.js';
import { ClientError, transportError } from './errors.js';
import { GrpcWatchMux } from './grpc-watch.js';
import { etcdMethods } from './proto.js';
import { type ClientTls, type Json, parseEndpoint, type TransportOptions } from './transport.js';
import type { UnaryRpc, Wire } from './wire.js';

type Method = MethodDefinition<Json, Json>;

/** Reconnect quickly after a member restart (grpc-js starts at 1 s and grows to 120 s). */
const CHANNEL_OPTIONS = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2000,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  'grpc.max_send_message_length': 64 * 1024 * 1024,
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
};

interface GrpcEndpoint {
  target: string;
  client: GrpcClient;
}

export class GrpcTransport implements Wire {
  readonly protocol = 'grpc';
  readonly timeoutMs: number;
  readonly endpoints: GrpcEndpoint[];
  readonly watches: GrpcWatchMux;
  private current = 0;
  private closed = false;
  private keepAlive: KeepAliveStream | undefined;

  constructor(o: TransportOptions) {
    if (o.endpoints.length === 0) throw new TypeError('at least one endpoint is needed');
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.endpoints = o.endpoints.map((e) => {
      const url = parseEndpoint(e);
      const creds: ChannelCredentials =
        url.protocol === 'https:' ? sslCredentials(o.tls) : credentials.createInsecure();
      const target =
        url.protocol === 'unix:'
          ? `unix:${decodeURIComponent(url.pathname)}`
          : `${url.hostname}:${url.port || (url.protocol === 'https:' ? 443 : 80)}`;
      return { target, client: new GrpcClient(target, creds, CHANNEL_OPTIONS) };
    });
    this.watches = new GrpcWatchMux(this);
  }

  /** The endpoint calls go to now. */
  get endpoint(): GrpcEndpoint {
    return this.endpoints[this.current % this.endpoints.length] as GrpcEndpoint;
  }

  failover(): void {
    this.current++;
  }

  async unary(rpc: UnaryRpc, body: Json, read = false): Promise<Json> {
    const method = etcdMethods().json[rpc];
    let lastError: ClientError | undefined;
    for (let attempt = 0; attempt <= this.endpoints.length; attempt++) {
      const endpoint = this.endpoint;
      try {
        return await this.once(endpoint, method, body);
      } catch (e) {
        const err = e as ServiceError;
        if (answered(err)) throw fromStatus(err);
        lastError = fromStatus(err);
        if (!(notDelivered(err) || read)) break;
        this.current++;
      }
    }
    throw lastError ?? transportError(`${rpc} failed`, undefined);
  }

  private once(endpoint: GrpcEndpoint, method: Method, body: Json): Promise<Json> {
    return new Promise((resolve, reject) => {
      endpoint.client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        body,
        new Metadata(),
        this.callOptions(),
        (err, value) => (err ? reject(err) : resolve(value ?? {})),
      );
    });
  }

  callOptions(): CallOptions {
    return { deadline: Date.now() + this.timeoutMs };
  }

  /** Opens a bidi stream on the current endpoint (the watch mux and keep-alives use it). */
  bidi(method: Method): ClientDuplexStream<Json, Json> {
    const { client } = this.endpoint;
    return client.makeBidiStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      new Metadata(),
      {},
    );
  }

  keepAliveOnce(id: string): Promise<Json> {
    if (this.closed) return Promise.reject(transportError('client closed', undefined));
    this.keepAlive ??= new KeepAliveStream(this, () => {
      this.keepAlive = undefined;
    });
    return this.keepAlive.renew(id);
  }

  async *snapshot(): AsyncIterable<Uint8Array> {
    const method = etcdMethods().raw.snapshot;
    const call = this.endpoint.client.makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      {},
      new Metadata(),
      {},
    );
    try {
      for await (const r of call as AsyncIterable<{ blob?: Uint8Array }>) {
        if (r.blob && r.blob.length > 0) yield r.blob;
      }
    } catch (e) {
      throw fromStatus(e as ServiceError);
    } finally {
      call.cancel();
    }
  }

  close(): void {
    this.closed = true;
    this.watches.close();
    this.keepAlive?.end();
    for (const e of this.endpoints) e.client.close();
  }
}

/**
 * Whether a status came from the server (its handler answered) rather than from grpc-js
 * (no connection, connection lost, deadline). etcd's own statuses carry its "etcdserver:"
 * (or "mvcc:", "lease") texts; grpc-js's local ones are UNAVAILABLE, CANCELLED or
 * DEADLINE_EXCEEDED with its own wording.
 */
export function answered(e: ServiceError): boolean {
  if (
    e.code !== status.UNAVAILABLE &&
    e.code !== status.DEADLINE_EXCEEDED &&
    e.code !== status.CANCELLED &&
    e.code !== status.INTERNAL
  )
    return true;
  return /^(etcdserver|etcdmain|mvcc|lease|etcdhttp|auth|etcetera):/.test(e.details ?? '');
}

/** The call certainly never reached a server's handler. */
function notDelivered(e: ServiceError): boolean {
  const d = e.details ?? '';
  return (
    e.code === status.UNAVAILABLE &&
    (d.startsWith('No connection established') || d.startsWith('Stream refused by server'))
  );
}

/** A grpc-js status as the client's error: the server's message and code as etcd sent them. */
export function fromStatus(e: ServiceError): ClientError {
  if (e instanceof ClientError) return e;
  if (typeof e?.code !== 'number') return transportError(String(e), e);
  if (!answered(e)) {
    // grpc-js ends its own texts with an empty "Resolution note: " for a plain address.
    const text = (e.details || e.message).replace(/\. Resolution note: $/, '');
    return new ClientError(text, e.code, 0, { cause: e });
  }
  return new ClientError(e.details || e.message, e.code, 200, { cause: e });
}

/**
 * Renewals over one LeaseKeepAlive stream: a request per renewal, answered in order per
 * lease ID. A broken stream fails the renewals waiting on it; the next opens a new stream.
 */
class KeepAliveStream {
  private readonly call: ClientDuplexStream<Json, Json>;
  private readonly waiting = new Map<string, Array<(r: Json | ClientError) => void>>();
  private done = false;

  constructor(
    private readonly transport: GrpcTransport,
    private readonly onEnd: () => void,
  ) {
    this.call = transport.bidi(etcdMethods().json['Lease.LeaseKeepAlive']);
    this.call.on('data', (r: Json) => {
      const key = String(r.ID ?? '0');
      const queue = this.waiting.get(key);
      const next = queue?.shift();
      if (queue?.length === 0) this.waiting.delete(key);
      next?.(r);
    });
    this.call.on('error', (e: ServiceError) => this.fail(fromStatus(e)));
    this.call.on('end', () =>
      this.fail(new ClientError('lease keep-alive stream ended', GrpcCode.Unavailable, 0)),
    );
  }

  renew(id: string): Promise<Json> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => this.fail(transportError('lease keep-alive timed out', undefined)),
        this.transport.timeoutMs,
      );
      const settle = (r: Json | ClientError) => {
        clearTimeout(timer);
        if (r instanceof ClientError) reject(r);
        else resolve(r);
      };
      const queue = this.waiting.get(id) ?? [];
      queue.push(settle);
      this.waiting.set(id, queue);
      this.call.write({ ID: id });
    });
  }

  private fail(err: ClientError): void {
    if (this.done) return;
    this.done = true;
    this.onEnd();
    if (err.httpStatus === 0) this.transport.failover();
    this.call.cancel();
    for (const queue of this.waiting.values()) for (const settle of queue) settle(err);
    this.waiting.clear();
  }

  end(): void {
    this.fail(new ClientError('client closed', GrpcCode.Canceled, 0));
  }
}

/** grpc-js's TLS credentials from the transport's { ca, cert, key } (PEM text or bytes). */
function sslCredentials(tls: ClientTls | undefined): ChannelCredentials {
  const buf = (v: string | Buffer | undefined) =>
    v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v);
  return credentials.createSsl(buf(tls?.ca), buf(tls?.key), buf(tls?.cert));
}
