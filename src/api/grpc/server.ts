/**
 * etcd's v3 gRPC API over a member: grpc-js's server on connections handed to it by the client
 * listener (src/server/client-http.ts sniffs the HTTP/2 preface, so gRPC shares the port with
 * the JSON API and the Kubernetes face, as etcd's client port does).
 *
 * Every method of rpc.proto is registered from the method table of src/wire/proto, with
 * identity (de)serializers: each handler decodes its request itself (codec.ts), so a message
 * that does not decode gets grpc-go's "error unmarshalling request" status, and the Watch
 * stream can send pre-encoded, spliced frames. Errors map to statuses in one place
 * (status.ts). Limits: a request message over --max-request-bytes plus etcd's 512 KiB gRPC
 * allowance is refused with RESOURCE_EXHAUSTED; HTTP/2 pings are answered by node:http2; a
 * peer that sends frames that are not HTTP/2 gets a GOAWAY and its session ends, nothing else.
 */
import type { Duplex } from 'node:stream';
import grpc from '@grpc/grpc-js';
import type { Logger } from '../../server/logger.js';
import type { MemberApi } from '../../server/types.js';
import { Cacher } from '../../watchcache/cacher.js';
import { EtcdProtobufFormat } from '../../watchcache/encoders/etcd-protobuf.js';
import { etcdProto } from '../../wire/proto/index.js';
import { authService } from './auth.js';
import { clusterService } from './cluster.js';
import { decodeRequest, encodeResponse } from './codec.js';
import { kvService } from './kv.js';
import { leaseService } from './lease.js';
import { maintenanceService } from './maintenance.js';
import { grpcStatusOf } from './status.js';
import type { GrpcContext, MethodImpl, ServiceImpl } from './types.js';
import { watchMethod } from './watch.js';

/** etcd's allowance for gRPC framing and headers on top of --max-request-bytes. */
export const GRPC_OVERHEAD_BYTES = 512 * 1024;

export interface GrpcFaceOptions {
  logger: Logger;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS per connection. Default 2^32-1 (etcd's). */
  maxConcurrentStreams?: number;
  /** A watch stream stops taking frames while this much is unsent. */
  watchHighWaterBytes?: number;
}

export interface GrpcFace {
  /** Serves gRPC on a connection whose HTTP/2 preface is still unread (or unshifted back). */
  injectConnection(socket: Duplex): void;
  /** Ends every call and session. */
  close(): Promise<void>;
}

export function createGrpcFace(member: MemberApi, options: GrpcFaceOptions): GrpcFace {
  const maxReceive = member.maxRequestBytes + GRPC_OVERHEAD_BYTES;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxReceive,
    'grpc.max_send_message_length': -1,
    'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 2 ** 32 - 1,
    // etcd's server keepalive policy: clients may ping as often as every 5 s without streams.
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.enable_channelz': 0,
  });
  let ownCacher: Cacher | undefined;
  const cacher = member.watchCache ?? (ownCacher = new Cacher(member.watchSource));
  const format = new EtcdProtobufFormat({
    fragmentMaxBytes: maxReceive,
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
    Watch: {
      Watch: watchMethod({ cacher, format, highWaterBytes: options.watchHighWaterBytes }),
    },
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
  for (const m of etcdProto().methods.values()) {
    const impl = services[m.service]?.[m.name];
    if (impl === undefined) continue; // grpc-js answers UNIMPLEMENTED
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
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  return {
    injectConnection: (socket) => injector.injectConnection(socket),
    async close() {
      injector.destroy();
      server.forceShutdown();
      ownCacher?.close();
    },
  };
}

type ProtoType = ReturnType<ReturnType<typeof etcdProto>['type']>;

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
          .then(() => impl.handle(decodeRequest(requestType, call.request), ctx))
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
        impl.handle(request, call, ctx);
      };
    case 'bidi':
      return (call: grpc.ServerDuplexStream<Buffer, Buffer>) => impl.handle(call, ctx);
  }
}
