/**
 * etcd's v3 gRPC API over a member: grpc-js's server on connections handed to it by the client
 * listener (src/server/client-http.ts sniffs the HTTP/2 preface, so gRPC shares the port with
 * the JSON API and the Kubernetes face, as etcd's client port does).
 *
 * Every method of rpc.proto is registered from the method table of src/wire/proto, with
 * identity (de)serializers: each handler decodes its request itself (codec.ts), so a message
 * that does not decode gets grpc-go's "error unmarshalling request" status. The Watch method
 * and every unary method (Put, Range, Txn, ...) are served on their HTTP/2 streams directly
 * (watch.ts, `serveUnary` here, both framed by raw-call.ts): their streams are taken from the
 * HTTP/2 server before grpc-js sees them, so that each flush of pre-encoded, spliced watch
 * responses is one stream write, and a unary call costs no grpc-js call object; grpc-js
 * serves the other streaming methods (Snapshot, LeaseKeepAlive). Errors map to statuses in one place
 * (status.ts). Limits: a request message over --max-request-bytes plus etcd's 512 KiB gRPC
 * allowance is refused with RESOURCE_EXHAUSTED; a connection may open at most
 * --max-concurrent-streams streams at once (HTTP/2's SETTINGS; more are refused with
 * REFUSED_STREAM); HTTP/2 pings are answered by node:http2, and a client pinging more often
 * than --grpc-keepalive-min-time is sent away (keepalive.ts); the member pings clients every
 * --grpc-keepalive-interval and closes a connection whose answer takes longer than
 * --grpc-keepalive-timeout (grpc-js's keepalive); a peer that sends frames that are not
 * HTTP/2 gets a GOAWAY and its session ends, nothing else.
 */
import type {
  Http2Server,
  IncomingHttpHeaders,
  ServerHttp2Session,
  ServerHttp2Stream,
} from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import grpc from '@grpc/grpc-js';
import { GrpcCode } from '../../errors.js';
import type { Logger } from '../../server/logger.js';
import { clientCertCommonName } from '../../server/tls.js';
import type { Credentials, MemberApi } from '../../server/types.js';
import { Cacher } from '../../watchcache/cacher.js';
import { EtcdProtobufFormat } from '../../watchcache/encoders/etcd-protobuf.js';
import { etcdProto } from '../../wire/proto/index.js';
import { callerContext, credentials, watchPermits } from '../etcd/route.js';
import { authService } from './auth.js';
import { clusterService } from './cluster.js';
import { decodeRequest, encodeResponse } from './codec.js';
import { enforcePingPolicy } from './keepalive.js';
import { kvService } from './kv.js';
import { leaseService } from './lease.js';
import { maintenanceService } from './maintenance.js';
import { RawGrpcCall } from './raw-call.js';
import { grpcStatusOf } from './status.js';
import type { GrpcContext, MethodImpl, ServiceImpl, UnaryMethod } from './types.js';
import { serveWatch, WATCH_PATH, type WatchServiceOptions } from './watch.js';

/** etcd's allowance for gRPC framing and headers on top of --max-request-bytes. */
export const GRPC_OVERHEAD_BYTES = 512 * 1024;

/** grpc-js's "never" for its keepalive timer. */
const KEEPALIVE_NEVER_MS = 2 ** 31 - 1;

export interface GrpcKeepalive {
  /** --grpc-keepalive-min-time: clients pinging more often are sent away. */
  minTimeMs: number;
  /** --grpc-keepalive-interval: the member pings each connection this often (0: never). */
  intervalMs: number;
  /** --grpc-keepalive-timeout: an unanswered ping closes the connection after this (0: never). */
  timeoutMs: number;
}

/** etcd's defaults: 5 s, 2 h, 20 s. */
export const DEFAULT_KEEPALIVE: GrpcKeepalive = {
  minTimeMs: 5000,
  intervalMs: 2 * 60 * 60 * 1000,
  timeoutMs: 20_000,
};

export interface GrpcFaceOptions {
  logger: Logger;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS per connection. Default 2^32-1 (etcd's). */
  maxConcurrentStreams?: number;
  /** Keepalive pings both ways (etcd's --grpc-keepalive-* flags). Default etcd's. */
  keepalive?: GrpcKeepalive;
  /** A watch stream stops taking frames while this much is unsent. */
  watchHighWaterBytes?: number;
  /** --max-watches-per-stream: watches one Watch call may hold. Default the session's. */
  maxWatchesPerStream?: number;
}

export interface GrpcFace {
  /** Serves gRPC on a connection whose HTTP/2 preface is still unread (or unshifted back). */
  injectConnection(socket: Duplex): void;
  /** Ends every call and session. */
  close(): Promise<void>;
}

export function createGrpcFace(member: MemberApi, options: GrpcFaceOptions): GrpcFace {
  const maxReceive = member.maxRequestBytes + GRPC_OVERHEAD_BYTES;
  const keepalive = options.keepalive ?? DEFAULT_KEEPALIVE;
  // etcd sets the server's pings only when both the interval and the timeout are non-zero.
  const pings = keepalive.intervalMs > 0 && keepalive.timeoutMs > 0;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxReceive,
    'grpc.max_send_message_length': -1,
    'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 2 ** 32 - 1,
    'grpc.keepalive_time_ms': pings
      ? Math.min(keepalive.intervalMs, KEEPALIVE_NEVER_MS)
      : KEEPALIVE_NEVER_MS,
    'grpc.keepalive_timeout_ms': pings ? keepalive.timeoutMs : 20_000,
    'grpc.enable_channelz': 0,
  });
  let ownCacher: Cacher | undefined;
  const cacher = member.watchCache ?? (ownCacher = new Cacher(member.watchSource));
  const format = new EtcdProtobufFormat({
    fragmentMaxBytes: maxReceive,
    onEncode: (part) => cacher.metrics.encodedParts.inc({ format: 'etcd-protobuf', part }),
    header: () => {
      const h = member.header();
      return { clusterId: h.clusterId, memberId: h.memberId, raftTerm: String(h.raftTerm) };
    },
  });
  const ctx: GrpcContext = {
    member,
    maxRequestBytes: member.maxRequestBytes,
    logger: options.logger,
  };
  const services: Record<string, ServiceImpl> = {
    KV: kvService,
    Lease: leaseService,
    Cluster: clusterService,
    Maintenance: maintenanceService,
    Auth: authService,
  };
  const byService = new Map<
    string,
    {
      def: Record<string, grpc.MethodDefinition<Buffer, Buffer>>;
      impl: grpc.UntypedServiceImplementation;
    }
  >();
  /** The unary methods, by path: served on their HTTP/2 streams directly (serveUnary). */
  const unaryByPath = new Map<string, UnaryRoute>();
  for (const m of etcdProto().methods.values()) {
    const impl = services[m.service]?.[m.name];
    if (impl === undefined) continue; // grpc-js answers UNIMPLEMENTED
    if (impl.kind === 'unary' && !m.requestStream && !m.responseStream)
      unaryByPath.set(m.path, {
        handle: impl.handle,
        requestType: m.requestType,
        responseType: m.responseType,
      });
    let entry = byService.get(m.service);
    if (entry === undefined) {
      entry = { def: {}, impl: {} };
      byService.set(m.service, entry);
    }
    entry.def[m.name] = {
      path: m.path,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (b: Buffer) => b,
      responseDeserialize: (b: Buffer) => b,
      originalName: m.name,
    };
    entry.impl[m.name] = bind(impl, m.requestType, m.responseType, ctx);
  }
  for (const { def, impl } of byService.values()) server.addService(def, impl);
  const watch: WatchServiceOptions = {
    cacher,
    format,
    maxReceiveBytes: maxReceive,
    highWaterBytes: options.watchHighWaterBytes,
    maxWatches: options.maxWatchesPerStream,
  };
  const injector = createInjector(server, (stream, headers) => {
    const path = headers[':path'];
    if (path === undefined || !isGrpc(headers)) return false;
    const route = unaryByPath.get(path);
    if (route !== undefined) {
      serveUnary(route, stream, headers, ctx, maxReceive);
      return true;
    }
    if (path !== WATCH_PATH) return false;
    // The stream's messages wait in it (nothing reads them yet) while its caller is identified.
    callerContext(ctx, credentialsOfStream(stream, headers)).then(
      (own) => {
        if (stream.destroyed) return;
        serveWatch({ ...watch, permits: watchPermits(own.member) }, stream, headers);
      },
      (e) => {
        if (stream.destroyed) return;
        new RawGrpcCall(stream, headers, { maxReceiveBytes: maxReceive }).finish(grpcStatusOf(e));
      },
    );
    return true;
  });
  injector.http2.on('session', (session: ServerHttp2Session) =>
    enforcePingPolicy(session, {
      minTimeMs: keepalive.minTimeMs,
      onEnforced: (remote) =>
        options.logger.warn({ remote }, 'a gRPC client pinged too often: sent GOAWAY'),
    }),
  );
  return {
    injectConnection: (socket) => injector.injectConnection(socket),
    async close() {
      injector.destroy();
      server.forceShutdown();
      ownCacher?.close();
    },
  };
}

const isGrpc = (headers: IncomingHttpHeaders): boolean =>
  headers['content-type']?.startsWith('application/grpc') === true;

/** Serves a stream itself and returns true, or returns false to leave it to grpc-js. */
type StreamTap = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean;

/**
 * grpc-js's connection injector, and the node:http2 server behind it (grpc-js keeps it in a
 * private map; its sessions are needed for the ping policy). grpc-js's 'stream' listener is
 * wrapped so that `tap` sees each new stream first. Throws if grpc-js changed so that the
 * server or its listener cannot be found, rather than serving without them.
 */
function createInjector(
  server: grpc.Server,
  tap: StreamTap,
): {
  injectConnection(socket: Duplex): void;
  destroy(): void;
  http2: Http2Server;
} {
  const servers = (server as unknown as { http2Servers?: Map<Http2Server, unknown> }).http2Servers;
  if (!(servers instanceof Map)) throw new Error('grpc-js keeps no http2Servers map');
  const before = new Set(servers.keys());
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const http2 = [...servers.keys()].find((s) => !before.has(s));
  if (http2 === undefined) throw new Error('grpc-js created no http2 server for the injector');
  const grpcListeners = http2.listeners('stream') as ((...args: unknown[]) => void)[];
  if (grpcListeners.length === 0) throw new Error('grpc-js listens to no http2 streams');
  http2.removeAllListeners('stream');
  http2.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, ...rest) => {
    if (tap(stream, headers)) return;
    for (const l of grpcListeners) l(stream, headers, ...rest);
  });
  return {
    injectConnection: (s) => injector.injectConnection(s),
    destroy: () => injector.destroy(),
    http2,
  };
}

type ProtoType = ReturnType<ReturnType<typeof etcdProto>['type']>;

interface UnaryRoute {
  handle: UnaryMethod;
  requestType: ProtoType;
  responseType: ProtoType;
}

/**
 * A unary call served on its HTTP/2 stream (raw-call.ts frames it): the one request message,
 * once the client half-closed, goes through the same decode, caller identification, handler,
 * encode and status mapping as grpc-js's path in `bind` below, without grpc-js's per-call
 * machinery (interceptor chain, metadata objects, deadline timer, stream wrappers), which
 * was the largest part of a member's CPU per put over gRPC. A deadline is the client's to
 * keep: it resets the stream, and the answer then goes nowhere. A call that carries no
 * request message, or more than one, ends with INTERNAL, as grpc-go ends it.
 */
function serveUnary(
  route: UnaryRoute,
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  ctx: GrpcContext,
  maxReceiveBytes: number,
): void {
  const call = new RawGrpcCall(stream, headers, { maxReceiveBytes });
  let request: Buffer | undefined;
  let messages = 0;
  call.start({
    message(bytes) {
      messages++;
      request = bytes;
    },
    end() {
      if (messages !== 1 || request === undefined) {
        call.finish({
          code: GrpcCode.Internal,
          details: `grpc: a unary call takes one request message, not ${messages}`,
        });
        return;
      }
      const bytes = request;
      request = undefined;
      Promise.resolve()
        .then(async () => {
          const decoded = decodeRequest(route.requestType, bytes);
          const own = await callerContext(ctx, credentialsOfStream(stream, headers));
          return route.handle(decoded, own);
        })
        .then(
          (res) => {
            const out = encodeResponse(route.responseType, res);
            call.writeMessages([{ chunks: [out], bytes: out.length }]);
            call.finish({ code: GrpcCode.OK, details: '' });
          },
          (e) => {
            const s = grpcStatusOf(e);
            if (s.code === GrpcCode.Unknown)
              ctx.logger.error({ err: s.details, method: headers[':path'] }, 'gRPC handler failed');
            call.finish(s);
          },
        );
    },
    close() {
      request = undefined;
    },
  });
}

function bind(
  impl: MethodImpl,
  requestType: ProtoType,
  responseType: ProtoType,
  ctx: GrpcContext,
): grpc.UntypedHandleCall {
  switch (impl.kind) {
    case 'unary':
      return (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        Promise.resolve()
          .then(async () => {
            const request = decodeRequest(requestType, call.request);
            return impl.handle(request, await callerContext(ctx, credentialsOf(call)));
          })
          .then(
            (res) => callback(null, encodeResponse(responseType, res)),
            (e) => {
              const s = grpcStatusOf(e);
              if (s.code === grpc.status.UNKNOWN)
                ctx.logger.error({ err: s.details, method: call.getPath() }, 'gRPC handler failed');
              callback({ code: s.code, details: s.details });
            },
          );
      };
    case 'serverStream':
      return (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        let request: ReturnType<typeof decodeRequest>;
        try {
          request = decodeRequest(requestType, call.request);
        } catch (e) {
          const s = grpcStatusOf(e);
          call.emit('error', { code: s.code, details: s.details });
          return;
        }
        callerContext(ctx, credentialsOf(call)).then(
          (own) => impl.handle(request, call, own),
          (e) => {
            const s = grpcStatusOf(e);
            call.emit('error', { code: s.code, details: s.details });
          },
        );
      };
    case 'bidi':
      // The stream's messages wait (the call is paused until a 'data' listener is added)
      // while its caller is identified.
      return (call: grpc.ServerDuplexStream<Buffer, Buffer>) =>
        void callerContext(ctx, credentialsOf(call)).then(
          (own) => impl.handle(call, own),
          (e) => {
            const s = grpcStatusOf(e);
            call.emit('error', { code: s.code, details: s.details });
          },
        );
  }
}

/** The same, from a stream's request headers (gRPC metadata travels as HTTP/2 headers). */
function credentialsOfStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Credentials {
  const value = headers.token ?? headers.authorization;
  const token = Array.isArray(value) ? value[0] : value;
  return credentials(token, clientCertCommonName(stream.session?.socket as Socket | undefined));
}

/**
 * etcd reads the token from the metadata `token`, else `authorization` (its gateway's); with
 * --client-cert-auth the verified client certificate's CN is the user when there is none.
 */
function credentialsOf(call: {
  metadata: grpc.Metadata;
  getAuthContext(): { sslPeerCertificate?: { subject?: unknown } };
}): Credentials {
  const value = call.metadata.get('token')[0] ?? call.metadata.get('authorization')[0];
  const subject = call.getAuthContext().sslPeerCertificate?.subject as
    | { CN?: string | string[] }
    | undefined;
  const cn = Array.isArray(subject?.CN) ? subject.CN[0] : subject?.CN;
  return credentials(value === undefined ? undefined : String(value), cn);
}
