/**
 * The client's side of etcd's JSON wire forms: requests out (bytes → base64, 64-bit IDs as
 * decimal strings), answers in (absent fields are zero values, as protobuf's JSON mapping
 * leaves them out).
 */

import { bytesToUtf8, fromBase64, prefixEnd, toBase64, utf8ToBytes } from '../wire/bytes.js';
import {
  decodeEvent as decodeEventJson,
  decodeHeader as decodeHeaderJson,
  decodeKeyValue,
  type EventJson,
  idOfJson,
  int64OfJson,
  type KeyValueJson,
  type ResponseHeaderJson,
} from '../wire/etcd-json.js';
import type {
  Compare,
  DeleteOptions,
  KeyLike,
  KeySelector,
  KeyValue,
  LeaseIdLike,
  Member,
  PutOptions,
  RangeOptions,
  ResponseHeader,
  TxnOp,
  TxnOpResponse,
  TxnRequest,
  WatchEvent,
} from './types.js';

export { prefixEnd };

type Json = Record<string, unknown>;

/** A key or value argument: a string is UTF-8 text, bytes are taken as they are. */
export function toBytes(k: KeyLike): Uint8Array {
  return typeof k === 'string' ? utf8ToBytes(k) : k;
}

export function b64(k: KeyLike): string {
  return toBase64(toBytes(k));
}

export function fromB64(s: unknown): Uint8Array {
  return fromBase64(typeof s === 'string' ? s : undefined);
}

/** UTF-8 text of bytes (keys and values printed by the CLI and tests). */
export const text = bytesToUtf8;
export const num = int64OfJson;
export const id = idOfJson;

export function leaseText(v: LeaseIdLike | undefined): string | undefined {
  return v === undefined ? undefined : BigInt(v).toString();
}

/**
 * The wire key and range_end of a key selector. As etcd's Go client does, an empty key with
 * `prefix` or `fromKey` means every key (key and range_end "\0").
 */
export function selector(key: KeyLike, s: KeySelector): { key: string; range_end?: string } {
  const k = toBytes(key);
  if ((s.prefix || s.fromKey) && k.length === 0) return { key: 'AA==', range_end: 'AA==' };
  if (s.prefix) return { key: b64(k), range_end: b64(prefixEnd(k)) };
  if (s.fromKey) return { key: b64(k), range_end: 'AA==' };
  return { key: b64(k), range_end: s.rangeEnd === undefined ? undefined : b64(s.rangeEnd) };
}

export function encodeRange(key: KeyLike, o: RangeOptions = {}): Json {
  return {
    ...selector(key, o),
    limit: o.limit,
    revision: o.revision,
    sort_order: o.sortOrder,
    sort_target: o.sortTarget,
    serializable: o.serializable,
    keys_only: o.keysOnly,
    count_only: o.countOnly,
    min_mod_revision: o.minModRevision,
    max_mod_revision: o.maxModRevision,
    min_create_revision: o.minCreateRevision,
    max_create_revision: o.maxCreateRevision,
  };
}

export function encodePut(key: KeyLike, value: KeyLike, o: PutOptions = {}): Json {
  return {
    key: b64(key),
    value: b64(value),
    lease: leaseText(o.lease),
    prev_kv: o.prevKv,
    ignore_value: o.ignoreValue,
    ignore_lease: o.ignoreLease,
  };
}

export function encodeDelete(key: KeyLike, o: DeleteOptions = {}): Json {
  return { ...selector(key, o), prev_kv: o.prevKv };
}

function encodeCompare(c: Compare): Json {
  const base = {
    ...selector(c.key, c),
    target: c.target,
    result: c.result,
  };
  switch (c.target) {
    case 'VALUE':
      return { ...base, value: b64(c.value) };
    case 'VERSION':
      return { ...base, version: c.version };
    case 'CREATE':
      return { ...base, create_revision: c.createRevision };
    case 'MOD':
      return { ...base, mod_revision: c.modRevision };
    case 'LEASE':
      return { ...base, lease: leaseText(c.lease) };
  }
}

function encodeOp(op: TxnOp): Json {
  if ('range' in op) return { request_range: encodeRange(op.range.key, op.range) };
  if ('put' in op) return { request_put: encodePut(op.put.key, op.put.value, op.put) };
  if ('delete' in op) return { request_delete_range: encodeDelete(op.delete.key, op.delete) };
  return { request_txn: encodeTxn(op.txn) };
}

export function encodeTxn(t: TxnRequest): Json {
  return {
    compare: (t.compare ?? []).map(encodeCompare),
    success: (t.success ?? []).map(encodeOp),
    failure: (t.failure ?? []).map(encodeOp),
  };
}

// --- answers ----------------------------------------------------------------------------

export const decodeHeader = (h: unknown): ResponseHeader =>
  decodeHeaderJson(h as ResponseHeaderJson | undefined);
export const decodeKv = (v: unknown): KeyValue => decodeKeyValue(v as KeyValueJson | undefined);

export const kvList = (v: unknown): KeyValue[] =>
  ((v as unknown[] | undefined) ?? []).map(decodeKv);

export function decodeOpResponse(v: unknown): TxnOpResponse {
  const o = v as Json;
  const revisionOf = (r: Json) => num((r.header as Json | undefined)?.revision);
  if (o.response_range) {
    const r = o.response_range as Json;
    const kvs = kvList(r.kvs);
    return {
      type: 'range',
      revision: revisionOf(r),
      kvs,
      more: r.more === true,
      count: num(r.count),
    };
  }
  if (o.response_put) {
    const r = o.response_put as Json;
    const out: TxnOpResponse = { type: 'put', revision: revisionOf(r) };
    return r.prev_kv ? { ...out, prevKv: decodeKv(r.prev_kv) } : out;
  }
  if (o.response_delete_range) {
    const r = o.response_delete_range as Json;
    return {
      type: 'delete',
      revision: revisionOf(r),
      deleted: num(r.deleted),
      prevKvs: kvList(r.prev_kvs),
    };
  }
  const r = (o.response_txn ?? {}) as Json;
  return {
    type: 'txn',
    succeeded: r.succeeded === true,
    responses: ((r.responses as unknown[] | undefined) ?? []).map(decodeOpResponse),
  };
}

export function decodeMember(v: unknown): Member {
  const o = (v ?? {}) as Json;
  return {
    id: id(o.ID),
    name: (o.name as string | undefined) ?? '',
    peerURLs: (o.peerURLs as string[] | undefined) ?? [],
    clientURLs: (o.clientURLs as string[] | undefined) ?? [],
    isLearner: o.isLearner === true,
  };
}

export const decodeEvent = (v: unknown): WatchEvent => decodeEventJson(v as EventJson);
