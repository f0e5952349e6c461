/**
 * The one mapping from errors to gRPC statuses. An EtceteraError carries its gRPC code in
 * the catalogue (src/errors.ts); the status message is etcd's own text, byte for byte, for
 * codes that have one (etcd's clients recognise errors by that text, so no detail is added),
 * and etcetera's text with its detail otherwise. Anything else is a bug: Unknown, as grpc-go
 * reports a handler's plain error.
 */
import { ERRORS, EtceteraError, GrpcCode } from '../../errors.js';

export interface GrpcStatus {
  code: GrpcCode;
  details: string;
}

/** Prefixes of etcd's (and grpc-go's) own texts in the catalogue. */
const ETCD_TEXT = /^(?:etcdserver: |mvcc: |raft: |raft proposal|grpc: )/;

export function grpcStatusOf(e: unknown): GrpcStatus {
  if (e instanceof EtceteraError) {
    const own = ERRORS[e.code].message;
    if (ETCD_TEXT.test(own) && e.code !== 'ERR_GRPC_BAD_MESSAGE')
      return { code: e.grpcCode, details: own };
    return { code: e.grpcCode, details: e.message };
  }
  return { code: GrpcCode.Unknown, details: e instanceof Error ? e.message : String(e) };
}
