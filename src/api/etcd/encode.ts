/**
 * Responses of etcd's v3 JSON API, field for field as etcd 3.4's gateway prints them:
 * bytes as base64, int64 as decimal strings, and every field at its zero value left out
 * (false, 0, "", empty lists), protobuf's JSON mapping without EmitDefaults. Keys are in
 * the order etcd prints them, so answers can be compared by eye.
 */

import type { MemberInfo, MemberStatus, ResponseHeader } from '../../server/types.js';
import type {
  DeleteRangeResult,
  KeyValue,
  LeaseTimeToLive,
  PutResult,
  RangeResult,
  ResponseOp,
  TxnResult,
} from '../../store/types.js';
import { encodeBytes } from './wire.js';

export type Json = Record<string, unknown>;

/** int64 → decimal string, or undefined at zero (so JSON.stringify drops it). */
const i64 = (n: number): string | undefined => (n === 0 ? undefined : String(n));
const nonEmpty = <T>(xs: readonly T[]): readonly T[] | undefined =>
  xs.length === 0 ? undefined : xs;
const truthy = (b: boolean): true | undefined => (b ? true : undefined);
const str = (s: string): string | undefined => (s === '' || s === '0' ? undefined : s);

export function encodeHeader(h: ResponseHeader, withRevision = true): Json {
  return {
    cluster_id: str(h.clusterId),
    member_id: str(h.memberId),
    revision: withRevision ? i64(h.revision) : undefined,
    raft_term: i64(h.raftTerm),
  };
}

export function encodeKv(kv: KeyValue): Json {
  return {
    key: kv.key.length === 0 ? undefined : encodeBytes(kv.key),
    create_revision: i64(kv.createRevision),
    mod_revision: i64(kv.modRevision),
    version: i64(kv.version),
    value: kv.value.length === 0 ? undefined : encodeBytes(kv.value),
    lease: i64(kv.lease),
  };
}

function rangeBody(r: RangeResult): Json {
  return {
    kvs: nonEmpty(r.kvs.map(encodeKv)),
    more: truthy(r.more),
    count: i64(r.count),
  };
}

function putBody(r: PutResult): Json {
  return { prev_kv: r.prevKv ? encodeKv(r.prevKv) : undefined };
}

function deleteBody(r: DeleteRangeResult): Json {
  return { deleted: i64(r.deleted), prev_kvs: nonEmpty(r.prevKvs.map(encodeKv)) };
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
          header: { revision: i64(op.response.revision) },
          ...rangeBody(op.response),
        },
      };
    case 'put':
      return {
        response_put: { header: { revision: i64(op.response.revision) }, ...putBody(op.response) },
      };
    case 'deleteRange':
      return {
        response_delete_range: {
          header: { revision: i64(op.response.revision) },
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
  return { header: encodeHeader(h), ID: i64(id), TTL: i64(ttl) };
}

export function encodeLeaseKeepAlive(h: ResponseHeader, id: number, ttl: number): Json {
  return { header: encodeHeader(h), ID: i64(id), TTL: i64(ttl) };
}

export function encodeLeaseTimeToLive(h: ResponseHeader, l: LeaseTimeToLive): Json {
  return {
    header: encodeHeader(h),
    ID: i64(l.id),
    TTL: i64(l.ttl),
    grantedTTL: i64(l.grantedTtl),
    keys: nonEmpty(l.keys.map(encodeBytes)),
  };
}

export function encodeLeaseLeases(h: ResponseHeader, ids: readonly number[]): Json {
  return { header: encodeHeader(h), leases: nonEmpty(ids.map((id) => ({ ID: String(id) }))) };
}

// --- cluster and maintenance --------------------------------------------------------------

export function encodeMember(m: MemberInfo): Json {
  return {
    ID: str(m.id),
    name: str(m.name),
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
    version: str(s.version),
    dbSize: i64(s.dbSize),
    leader: str(s.leader),
    raftIndex: i64(s.raftIndex),
    raftTerm: i64(s.raftTerm),
    raftAppliedIndex: i64(s.raftAppliedIndex),
    errors: nonEmpty(s.errors),
    dbSizeInUse: i64(s.dbSizeInUse),
    isLearner: truthy(s.isLearner),
  };
}
