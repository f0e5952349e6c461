/**
 * How the gRPC face's services are written: each method is a unary function from the decoded
 * request to a response message, or a streaming handler over grpc-js's call. server.ts
 * decodes, encodes and maps errors (status.ts) around them.
 */
import type grpc from '@grpc/grpc-js';
import type { Logger } from '../../server/logger.js';
import type { MemberApi } from '../../server/types.js';
import type { RouteContext } from '../etcd/route.js';
import type { Msg } from './codec.js';

export interface GrpcContext extends RouteContext {
  readonly member: MemberApi;
  readonly logger: Logger;
}

export type UnaryMethod = (request: Msg, ctx: GrpcContext) => Promise<Msg>;

/** A server-streaming method: writes encoded responses, ends the call itself. */
export type ServerStreamMethod = (
  request: Msg,
  call: grpc.ServerWritableStream<Buffer, Buffer>,
  ctx: GrpcContext,
) => void;

/** A bidirectional method: reads raw request bytes, writes encoded responses. */
export type BidiMethod = (call: grpc.ServerDuplexStream<Buffer, Buffer>, ctx: GrpcContext) => void;

export type MethodImpl =
  | { readonly kind: 'unary'; readonly handle: UnaryMethod }
  | { readonly kind: 'serverStream'; readonly handle: ServerStreamMethod }
  | { readonly kind: 'bidi'; readonly handle: BidiMethod };

/** A service's methods by name. */
export type ServiceImpl = Readonly<Record<string, MethodImpl>>;

export const unary = (handle: UnaryMethod): MethodImpl => ({ kind: 'unary', handle });
