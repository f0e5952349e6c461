/**
 * The gRPC watch carrier: every watch of a client shares one bidi Watch stream, as etcd's
 * own clients do. A create request is answered by a "created" response; the server handles
 * a stream's creates in order, so the responses are matched to the creates first in, first
 * out, and later responses are routed by their watch_id. Cancelling a watch sends a
 * cancel_request (or, when its "created" has not come yet, sends one once it does).
 *
 * When the stream breaks, every watch on it is told (sink.lost) and resumes on its own
 * (watch.ts): the next create opens a new stream, on the next endpoint when the connection
 * itself failed.
 */
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import { GrpcCode } from '../errors.js';
import { ClientError } from './errors.js';
import { fromStatus, type GrpcTransport } from './grpc-transport.js';
import { etcdMethods } from './proto.js';
import type { Json } from './transport.js';
import type { WatchCarrier, WatchSink } from './wire.js';

interface Entry {
  sink: WatchSink;
  /** The server's watch ID once created. */
  id: string | undefined;
  /** Cancelled by the client; nothing more is delivered. */
  gone: boolean;
}

class Stream {
  readonly call: ClientDuplexStream<Json, Json>;
  readonly pending: Entry[] = [];
  readonly byId = new Map<string, Entry>();
  broken = false;

  constructor(
    transport: GrpcTransport,
    private readonly onBroken: (s: Stream, cause: ClientError) => void,
  ) {
    this.call = transport.bidi(etcdMethods().json['Watch.Watch']);
    this.call.on('data', (r: Json) => this.route(r));
    this.call.on('error', (e: ServiceError) => this.break(fromStatus(e)));
    this.call.on('end', () =>
      this.break(new ClientError('watch stream ended', GrpcCode.Unavailable, 0)),
    );
  }

  private route(r: Json): void {
    const id = String(r.watch_id ?? '0');
    let entry: Entry | undefined;
    if (r.created === true) {
      entry = this.pending.shift();
      if (entry === undefined) return;
      entry.id = id;
      if (entry.gone) {
        if (r.canceled !== true) this.call.write({ cancel_request: { watch_id: id } });
        return;
      }
      if (r.canceled !== true) this.byId.set(id, entry);
    } else {
      entry = this.byId.get(id);
      if (entry === undefined) return;
      if (r.canceled === true) this.byId.delete(id);
    }
    if (entry.gone) return;
    if (!entry.sink.message(r)) this.drop(entry);
  }

  add(create: Json, sink: WatchSink): () => void {
    const entry: Entry = { sink, id: undefined, gone: false };
    this.pending.push(entry);
    this.call.write({ create_request: create });
    return () => this.drop(entry);
  }

  private drop(entry: Entry): void {
    if (entry.gone) return;
    entry.gone = true;
    if (entry.id === undefined || this.broken) return; // cancelled when its "created" comes
    if (this.byId.get(entry.id) === entry) {
      this.byId.delete(entry.id);
      this.call.write({ cancel_request: { watch_id: entry.id } });
    }
  }

  break(cause: ClientError): void {
    if (this.broken) return;
    this.broken = true;
    this.call.cancel();
    this.onBroken(this, cause);
    const live = [...this.pending, ...this.byId.values()].filter((e) => !e.gone);
    this.pending.length = 0;
    this.byId.clear();
    for (const e of live) {
      e.gone = true;
      // The server closing the stream with a status of its own refuses these watches.
      if (cause.httpStatus !== 0 && isRefusal(cause)) e.sink.refused(cause);
      else e.sink.lost(cause);
    }
  }
}

/** Statuses that retrying cannot change (the request itself is wrong). */
function isRefusal(e: ClientError): boolean {
  return (
    e.grpcCode === GrpcCode.InvalidArgument ||
    e.grpcCode === GrpcCode.PermissionDenied ||
    e.grpcCode === GrpcCode.Unimplemented ||
    e.grpcCode === GrpcCode.OutOfRange
  );
}

export class GrpcWatchMux implements WatchCarrier {
  private stream: Stream | undefined;
  private closed = false;

  constructor(private readonly transport: GrpcTransport) {}

  open(create: Json, sink: WatchSink): () => void {
    if (this.closed) {
      sink.refused(new ClientError('client closed', GrpcCode.Canceled, 0));
      return () => undefined;
    }
    this.stream ??= new Stream(this.transport, (s, cause) => {
      if (this.stream === s) this.stream = undefined;
      if (cause.httpStatus === 0 && !this.closed) this.transport.failover();
    });
    return this.stream.add(create, sink);
  }

  /** Watches open now (on the current stream). */
  get size(): number {
    return this.stream ? this.stream.pending.length + this.stream.byId.size : 0;
  }

  close(): void {
    this.closed = true;
    const s = this.stream;
    this.stream = undefined;
    s?.break(new ClientError('client closed', GrpcCode.Canceled, 0));
  }
}
