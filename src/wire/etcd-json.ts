/**
 * etcd v3's JSON wire forms (its grpc-gateway with protobuf's JSON mapping), shared by the
 * JSON face of the server (src/api) and the client (src/client): the shapes of a response
 * header, a key-value, an event, a watch response and the error bodies, and the helpers that
 * move between them and the decoded values both sides work with.
 *
 * The mapping: bytes are standard base64; int64 and uint64 are decimal strings (a reader
 * accepts JSON numbers too); every field at its zero value is left out (0, "", false, empty
 * lists), so a reader takes an absent field as zero. Keys are in protobuf field order, which
 * is the order etcd prints them.
 */
import { fromBase64, toBase64 } from './bytes.js';

/** An int64 or uint64 as it travels: etcd prints decimal strings, readers take numbers too. */
export type Int64Json = string | number;

// --- shapes ---------------------------------------------------------------------------------

/** etcdserverpb.ResponseHeader. */
export interface ResponseHeaderJson {
  cluster_id?: string;
  member_id?: string;
  revision?: Int64Json;
  raft_term?: Int64Json;
}

/** mvccpb.KeyValue. */
export interface KeyValueJson {
  key?: string;
  create_revision?: Int64Json;
  mod_revision?: Int64Json;
  version?: Int64Json;
  value?: string;
  lease?: Int64Json;
}

/** mvccpb.Event: PUT is enum value 0, so a PUT has no `type` at all. */
export interface EventJson {
  type?: 'PUT' | 'DELETE' | 0 | 1;
  kv?: KeyValueJson;
  prev_kv?: KeyValueJson;
}

/** etcdserverpb.WatchResponse, as one `{"result": ...}` message of the /v3/watch stream. */
export interface WatchResponseJson {
  header?: ResponseHeaderJson;
  watch_id?: Int64Json;
  created?: boolean;
  canceled?: boolean;
  compact_revision?: Int64Json;
  cancel_reason?: string;
  fragment?: boolean;
  events?: EventJson[];
}

/** The body of a failed unary call: the gRPC code and etcd's text (twice, as etcd sends it). */
export interface ErrorBodyJson {
  error: string;
  message: string;
  code: number;
}

/** A failure inside a gateway stream (watch, lease keepalive): `{"error": ...}`. */
export interface StreamErrorJson {
  grpc_code: number;
  http_code: number;
  message: string;
  http_status: string;
}

// --- decoded values -------------------------------------------------------------------------

/** A response header as both sides hold it. IDs stay decimal strings (the whole uint64 range). */
export interface ResponseHeader {
  clusterId: string;
  memberId: string;
  revision: number;
  raftTerm: number;
}

/** A key-value as the client holds it: the lease is a decimal string, "0" for none. */
export interface KeyValue {
  key: Uint8Array;
  createRevision: number;
  modRevision: number;
  version: number;
  value: Uint8Array;
  lease: string;
}

/** What the encoder needs of a key-value: a lease as a number (the store's) or a string. */
export interface KeyValueFields {
  readonly key: Uint8Array;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly value: Uint8Array;
  readonly lease: number | string;
}

export interface Event {
  type: 'PUT' | 'DELETE';
  kv: KeyValue;
  prevKv?: KeyValue;
}

// --- scalars --------------------------------------------------------------------------------

/** An int64 as etcd prints it: a decimal string, or undefined at zero (JSON leaves it out). */
export function int64Json(n: number): string | undefined {
  return n === 0 ? undefined : String(n);
}

/** A uint64 ID (decimal string) as etcd prints it: undefined when empty or "0". */
export function idJson(s: string): string | undefined {
  return s === '' || s === '0' ? undefined : s;
}

/** A read int64: absent is 0; a string or number is taken as it is. */
export function int64OfJson(v: unknown): number {
  return v === undefined || v === null ? 0 : Number(v);
}

/** A read uint64 ID as its decimal string: absent is "0". */
export function idOfJson(v: unknown): string {
  return v === undefined || v === null ? '0' : String(v);
}

// --- header and key-value -------------------------------------------------------------------

/** A header as etcd prints it; `withRevision` false for the cluster calls (etcd 3.4 omits it). */
export function encodeHeader(h: ResponseHeader, withRevision = true): ResponseHeaderJson {
  return {
    cluster_id: idJson(h.clusterId),
    member_id: idJson(h.memberId),
    revision: withRevision ? int64Json(h.revision) : undefined,
    raft_term: int64Json(h.raftTerm),
  };
}

export function decodeHeader(j: ResponseHeaderJson | undefined): ResponseHeader {
  const o = j ?? {};
  return {
    clusterId: idOfJson(o.cluster_id),
    memberId: idOfJson(o.member_id),
    revision: int64OfJson(o.revision),
    raftTerm: int64OfJson(o.raft_term),
  };
}

export function encodeKeyValue(kv: KeyValueFields): KeyValueJson {
  return {
    key: kv.key.length === 0 ? undefined : toBase64(kv.key),
    create_revision: int64Json(kv.createRevision),
    mod_revision: int64Json(kv.modRevision),
    version: int64Json(kv.version),
    value: kv.value.length === 0 ? undefined : toBase64(kv.value),
    lease: typeof kv.lease === 'string' ? idJson(kv.lease) : int64Json(kv.lease),
  };
}

export function decodeKeyValue(j: KeyValueJson | undefined): KeyValue {
  const o = j ?? {};
  return {
    key: fromBase64(o.key),
    createRevision: int64OfJson(o.create_revision),
    modRevision: int64OfJson(o.mod_revision),
    version: int64OfJson(o.version),
    value: fromBase64(o.value),
    lease: idOfJson(o.lease),
  };
}

export function decodeEvent(j: EventJson): Event {
  const type = j.type === 'DELETE' || j.type === 1 ? 'DELETE' : 'PUT';
  const ev: Event = { type, kv: decodeKeyValue(j.kv) };
  return j.prev_kv ? { ...ev, prevKv: decodeKeyValue(j.prev_kv) } : ev;
}
