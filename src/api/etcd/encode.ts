/**
 * Responses of etcd's v3 JSON API, field for field as etcd 3.4's gateway prints them:
 * bytes as base64, int64 as decimal strings, and every field at its zero value left out
 * (false, 0, "", empty lists), protobuf's JSON mapping without EmitDefaults. Keys are in
 * the order etcd prints them, so answers can be compared by eye.
 */

import type { MemberInfo, MemberStatus, ResponseHeader } from '../../server/types.js';
import type {
  DeleteRangeResult,
  LeaseTimeToLive,
  PutResult,
  RangeResult,
  ResponseOp,
  TxnResult,
} from '../../store/types.js';
import { toBase64 } from '../../wire/bytes.js';
import { encodeHeader, encodeKeyValue, idJson, int64Json } from '../../wire/etcd-json.js';

export type Json = Record<string, unknown>;

const nonEmpty = <T>(xs: readonly T[]): readonly T[] | undefined =>
  xs.length === 0 ? undefined : xs;
const truthy = (b: boolean): true | undefined => (b ? true : undefined);

function rangeBody(r: RangeResult): Json {
  return {
    kvs: nonEmpty(r.kvs.map(encodeKeyValue)),
    more: truthy(r.more),
    count: int64Json(r.count),
  };
}

function putBody(r: PutResult): Json {
  return { prev_kv: r.prevKv ? encodeKeyValue(r.prevKv) : undefined };
}

function deleteBody(r: DeleteRangeResult): Json {
  return { deleted: int64Json(r.deleted), prev_kvs: nonEmpty(r.prevKvs.map(encodeKeyValue)) };
}

export function encodeRange(h: ResponseHeader, r: RangeResult): Json {
  return { header: encodeHeader(h), ...rangeBody(r) };
}

export function encodePut(h: ResponseHeader, r: PutResult): Json {
  return { header: encodeHeader(h), ...putBody(r) };
}

export function encodeDeleteRange(h: ResponseHeader, r: DeleteRangeResult): Json {
  return { header: encodeHeader(h), ...deleteBody(r) };
}

/**
 * A txn's responses. Each nested range/put/delete answer carries a header with only the
 * revision it saw; a nested txn's header is empty, exactly as etcd 3.4 fills them.
 */
function encodeResponseOp(op: ResponseOp): Json {
  switch (op.type) {
    case 'range':
      return {
        response_range: {
          header: { revision: int64Json(op.response.revision) },
          ...rangeBody(op.response),
        },
      };
    case 'put':
      return {
        response_put: {
          header: { revision: int64Json(op.response.revision) },
          ...putBody(op.response),
        },
      };
    case 'deleteRange':
      return {
        response_delete_range: {
          header: { revision: int64Json(op.response.revision) },
          ...deleteBody(op.response),
        },
      };
    case 'txn':
      return { response_txn: { header: {}, ...txnBody(op.response) } };
  }
}

function txnBody(r: TxnResult): Json {
  return { succeeded: truthy(r.succeeded), responses: nonEmpty(r.responses.map(encodeResponseOp)) };
}

export function encodeTxn(h: ResponseHeader, r: TxnResult): Json {
  return { header: encodeHeader(h), ...txnBody(r) };
}

export function encodeHeaderOnly(h: ResponseHeader): Json {
  return { header: encodeHeader(h) };
}

// --- leases -----------------------------------------------------------------------------

export function encodeLeaseGrant(h: ResponseHeader, id: number, ttl: number): Json {
  return { header: encodeHeader(h), ID: int64Json(id), TTL: int64Json(ttl) };
}

export function encodeLeaseKeepAlive(h: ResponseHeader, id: number, ttl: number): Json {
  return { header: encodeHeader(h), ID: int64Json(id), TTL: int64Json(ttl) };
}

export function encodeLeaseTimeToLive(h: ResponseHeader, l: LeaseTimeToLive): Json {
  return {
    header: encodeHeader(h),
    ID: int64Json(l.id),
    TTL: int64Json(l.ttl),
    grantedTTL: int64Json(l.grantedTtl),
    keys: nonEmpty(l.keys.map(toBase64)),
  };
}

export function encodeLeaseLeases(h: ResponseHeader, ids: readonly number[]): Json {
  return { header: encodeHeader(h), leases: nonEmpty(ids.map((id) => ({ ID: String(id) }))) };
}

// --- cluster and maintenance --------------------------------------------------------------

export function encodeMember(m: MemberInfo): Json {
  return {
    ID: idJson(m.id),
    name: idJson(m.name),
    peerURLs: nonEmpty(m.peerURLs),
    clientURLs: nonEmpty(m.clientURLs),
    isLearner: truthy(m.isLearner),
  };
}

/** etcd 3.4's cluster answers carry no revision in their header. */
export function encodeMembers(
  h: ResponseHeader,
  members: readonly MemberInfo[],
  extra: Json = {},
): Json {
  return {
    header: encodeHeader(h, false),
    ...extra,
    members: nonEmpty(members.map(encodeMember)),
  };
}

export function encodeStatus(s: MemberStatus): Json {
  return {
    header: encodeHeader(s.header),
    version: idJson(s.version),
    dbSize: int64Json(s.dbSize),
    leader: idJson(s.leader),
    raftIndex: int64Json(s.raftIndex),
    raftTerm: int64Json(s.raftTerm),
    raftAppliedIndex: int64Json(s.raftAppliedIndex),
    errors: nonEmpty(s.errors),
    dbSizeInUse: int64Json(s.dbSizeInUse),
    isLearner: truthy(s.isLearner),
  };
}
