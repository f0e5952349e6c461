/**
 * Protobuf ↔ the shapes src/api/etcd's decoders and the member speak.
 *
 * Requests: protobuf bytes → a plain object with proto field names, int64 as decimal strings,
 * enums as numbers and bytes as Uint8Array, which the JSON face's decoders (etcd/decode.ts,
 * called with `from: 'protobuf'`) turn into the store's requests: one decoder, one set of
 * checks for both faces. Responses: the member's answers → plain objects protobufjs encodes,
 * zero fields left out as proto3 encoders do.
 */
import type protobuf from 'protobufjs';
import { EtceteraError } from '../../errors.js';
import type { MemberInfo, MemberStatus, ResponseHeader } from '../../server/types.js';
import type {
  DeleteRangeResult,
  PutResult,
  RangeResult,
  ResponseOp,
  TxnResult,
} from '../../store/types.js';
import { kvMessage } from '../../watchcache/encoders/etcd-protobuf.js';

export type Msg = Record<string, unknown>;

const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: Number };

/** A request message from its bytes; ERR_GRPC_BAD_MESSAGE when they do not decode. */
export function decodeRequest(type: protobuf.Type, bytes: Uint8Array): Msg {
  let m: protobuf.Message;
  try {
    m = type.decode(bytes);
  } catch (e) {
    // Only request_txn nests without bound: a TxnRequest deeper than the decoder goes is
    // deeper than any --max-txn-ops budget allows, and etcd answers it so.
    if (type.fullName === '.etcdserverpb.TxnRequest' && /nesting depth/.test((e as Error).message))
      throw new EtceteraError('ERR_TOO_MANY_OPS', {}, { cause: e });
    throw new EtceteraError(
      'ERR_GRPC_BAD_MESSAGE',
      { detail: `${type.name}: ${(e as Error).message}` },
      { cause: e },
    );
  }
  return type.toObject(m, TO_OBJECT) as Msg;
}

/** A response message to bytes (a Buffer view, no copy). */
export function encodeResponse(type: protobuf.Type, message: Msg): Buffer {
  const u8 = type.encode(message).finish();
  return Buffer.isBuffer(u8) ? u8 : Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

const nz = (n: number): number | undefined => (n === 0 ? undefined : n);
const id = (s: string): string | undefined => (s === '' || s === '0' ? undefined : s);
const nonEmpty = <T>(xs: readonly T[]): readonly T[] | undefined =>
  xs.length === 0 ? undefined : xs;
const truthy = (b: boolean): true | undefined => (b ? true : undefined);

export function header(h: ResponseHeader, withRevision = true): Msg {
  return {
    cluster_id: id(h.clusterId),
    member_id: id(h.memberId),
    revision: withRevision ? nz(h.revision) : undefined,
    raft_term: nz(h.raftTerm),
  };
}

function rangeBody(r: RangeResult): Msg {
  return { kvs: nonEmpty(r.kvs.map(kvMessage)), more: truthy(r.more), count: nz(r.count) };
}

function putBody(r: PutResult): Msg {
  return { prev_kv: r.prevKv ? kvMessage(r.prevKv) : undefined };
}

function deleteBody(r: DeleteRangeResult): Msg {
  return { deleted: nz(r.deleted), prev_kvs: nonEmpty(r.prevKvs.map(kvMessage)) };
}

export const rangeResponse = (h: ResponseHeader, r: RangeResult): Msg => ({
  header: header(h),
  ...rangeBody(r),
});
export const putResponse = (h: ResponseHeader, r: PutResult): Msg => ({
  header: header(h),
  ...putBody(r),
});
export const deleteRangeResponse = (h: ResponseHeader, r: DeleteRangeResult): Msg => ({
  header: header(h),
  ...deleteBody(r),
});

/** Nested answers carry a header with only the revision they saw, as etcd fills them. */
function responseOp(op: ResponseOp): Msg {
  const rev = (revision: number) => ({ revision: nz(revision) });
  switch (op.type) {
    case 'range':
      return { response_range: { header: rev(op.response.revision), ...rangeBody(op.response) } };
    case 'put':
      return { response_put: { header: rev(op.response.revision), ...putBody(op.response) } };
    case 'deleteRange':
      return {
        response_delete_range: { header: rev(op.response.revision), ...deleteBody(op.response) },
      };
    case 'txn':
      return { response_txn: { header: {}, ...txnBody(op.response) } };
  }
}

function txnBody(r: TxnResult): Msg {
  return { succeeded: truthy(r.succeeded), responses: nonEmpty(r.responses.map(responseOp)) };
}

export const txnResponse = (h: ResponseHeader, r: TxnResult): Msg => ({
  header: header(h),
  ...txnBody(r),
});

export const headerOnly = (h: ResponseHeader, withRevision = true): Msg => ({
  header: header(h, withRevision),
});

export function member(m: MemberInfo): Msg {
  return {
    ID: id(m.id),
    name: m.name === '' ? undefined : m.name,
    peerURLs: m.peerURLs,
    clientURLs: m.clientURLs,
    isLearner: truthy(m.isLearner),
  };
}

/** etcd 3.4's cluster answers carry no revision in their header. */
export function members(h: ResponseHeader, ms: readonly MemberInfo[], extra: Msg = {}): Msg {
  return { header: header(h, false), ...extra, members: ms.map(member) };
}

export function status(s: MemberStatus): Msg {
  return {
    header: header(s.header),
    version: s.version,
    dbSize: nz(s.dbSize),
    leader: id(s.leader),
    raftIndex: nz(s.raftIndex),
    raftTerm: nz(s.raftTerm),
    raftAppliedIndex: nz(s.raftAppliedIndex),
    errors: s.errors,
    dbSizeInUse: nz(s.dbSizeInUse),
    isLearner: truthy(s.isLearner),
  };
}
