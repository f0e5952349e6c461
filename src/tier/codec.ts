/**
 * The API tier's translation between the member contract's values (src/store/types.ts:
 * commands, range requests, results, events with bytes and branded numbers) and etcd's
 * wire shapes as src/client's gRPC transport carries them (etcd's field names, bytes as
 * base64, 64-bit integers as decimal strings; src/wire/etcd-json.ts), plus the upstream's
 * errors as catalogue errors so that the faces answer them as a member would.
 */
import type { ClientError } from '../client/errors.js';
import { EtceteraError, isEtceteraError } from '../errors.js';
import type {
  Command,
  CommandResult,
  Compare,
  DeleteRangeRequest,
  Event,
  KeyValue,
  LeaseId,
  PutRequest,
  RangeRequest,
  RangeResult,
  RequestOp,
  ResponseOp,
  Revision,
  TxnRequest,
  TxnResult,
} from '../store/types.js';
import { toBase64 } from '../wire/bytes.js';
import {
  decodeEvent,
  decodeKeyValue,
  type EventJson,
  int64OfJson,
  type KeyValueJson,
} from '../wire/etcd-json.js';

export type Json = Record<string, unknown>;

const rev = (n: number): Revision => n as Revision;
const b64 = (b: Uint8Array | undefined): string | undefined =>
  b === undefined || b.length === 0 ? undefined : toBase64(b);
/** A key is sent even when empty (etcd then answers "key is not provided"). */
const keyB64 = (b: Uint8Array): string => toBase64(b);

// --- requests ------------------------------------------------------------------------------

export function rangeJson(r: RangeRequest): Json {
  return {
    key: keyB64(r.key),
    range_end: b64(r.rangeEnd),
    limit: r.limit || undefined,
    revision: r.revision || undefined,
    sort_order: r.sortOrder,
    sort_target: r.sortTarget,
    serializable: r.serializable || undefined,
    keys_only: r.keysOnly || undefined,
    count_only: r.countOnly || undefined,
    min_mod_revision: r.minModRevision || undefined,
    max_mod_revision: r.maxModRevision || undefined,
    min_create_revision: r.minCreateRevision || undefined,
    max_create_revision: r.maxCreateRevision || undefined,
  };
}

function putJson(p: PutRequest): Json {
  return {
    key: keyB64(p.key),
    value: b64(p.value),
    lease: p.lease ? String(p.lease) : undefined,
    prev_kv: p.prevKv || undefined,
    ignore_value: p.ignoreValue || undefined,
    ignore_lease: p.ignoreLease || undefined,
  };
}

function deleteJson(d: DeleteRangeRequest): Json {
  return { key: keyB64(d.key), range_end: b64(d.rangeEnd), prev_kv: d.prevKv || undefined };
}

function compareJson(c: Compare): Json {
  const base = { key: keyB64(c.key), range_end: b64(c.rangeEnd), result: c.result };
  switch (c.target) {
    case 'VALUE':
      return { ...base, target: 'VALUE', value: b64(c.value) };
    case 'VERSION':
      return { ...base, target: 'VERSION', version: String(c.version) };
    case 'CREATE':
      return { ...base, target: 'CREATE', create_revision: String(c.createRevision) };
    case 'MOD':
      return { ...base, target: 'MOD', mod_revision: String(c.modRevision) };
    case 'LEASE':
      return { ...base, target: 'LEASE', lease: String(c.lease) };
  }
}

function opJson(op: RequestOp): Json {
  switch (op.type) {
    case 'range':
      return { request_range: rangeJson(op.request) };
    case 'put':
      return { request_put: putJson(op.request) };
    case 'deleteRange':
      return { request_delete_range: deleteJson(op.request) };
    case 'txn':
      return { request_txn: txnJson(op.request) };
  }
}

export function txnJson(t: TxnRequest): Json {
  return {
    compare: t.compare.map(compareJson),
    success: t.success.map(opJson),
    failure: t.failure.map(opJson),
  };
}

/** The unary call that carries a key-value write, and its body. */
export type WriteCall =
  | { rpc: 'KV.Put' | 'KV.DeleteRange' | 'KV.Txn' | 'KV.Compact'; body: Json }
  | { rpc: 'Lease.LeaseGrant' | 'Lease.LeaseRevoke' | 'Maintenance.Alarm'; body: Json };

/** The upstream call of a write command; undefined for the ones the tier cannot forward. */
export function writeCall(c: Command): WriteCall | undefined {
  switch (c.op) {
    case 'put':
      return { rpc: 'KV.Put', body: putJson(c) };
    case 'deleteRange':
      return { rpc: 'KV.DeleteRange', body: deleteJson(c) };
    case 'txn':
      return { rpc: 'KV.Txn', body: txnJson(c) };
    case 'compact':
      return { rpc: 'KV.Compact', body: { revision: String(c.revision) } };
    case 'leaseGrant':
      return { rpc: 'Lease.LeaseGrant', body: { TTL: String(c.ttl), ID: String(c.id) } };
    case 'leaseRevoke':
      return { rpc: 'Lease.LeaseRevoke', body: { ID: String(c.id) } };
    case 'alarm':
      return {
        rpc: 'Maintenance.Alarm',
        body: {
          action: c.action === 'activate' ? 'ACTIVATE' : 'DEACTIVATE',
          memberID: c.memberId,
          alarm: c.alarm,
        },
      };
    case 'auth':
    case 'noop':
      return undefined;
  }
}

// --- answers -------------------------------------------------------------------------------

/** A key-value as the store holds it (a lease ID beyond 2^53 loses precision; see README). */
export function kvOf(j: unknown): KeyValue {
  const kv = decodeKeyValue(j as KeyValueJson | undefined);
  return {
    key: kv.key,
    createRevision: rev(kv.createRevision),
    modRevision: rev(kv.modRevision),
    version: kv.version,
    value: kv.value,
    lease: Number(kv.lease) as LeaseId,
  };
}

const kvsOf = (v: unknown): KeyValue[] => ((v as unknown[] | undefined) ?? []).map(kvOf);

export function eventOf(j: unknown): Event {
  const e = decodeEvent(j as EventJson);
  const kv = kvOf((j as EventJson).kv);
  const prev = (j as EventJson).prev_kv;
  return prev !== undefined ? { type: e.type, kv, prevKv: kvOf(prev) } : { type: e.type, kv };
}

export const headerRevision = (r: Json): number =>
  int64OfJson((r.header as Json | undefined)?.revision);

export function rangeResultOf(r: Json): RangeResult {
  return {
    revision: rev(headerRevision(r)),
    kvs: kvsOf(r.kvs),
    more: r.more === true,
    count: int64OfJson(r.count),
  };
}

function opResultOf(o: Json, revision: Revision): ResponseOp {
  if (o.response_range !== undefined) {
    // A range inside a txn answers at the revision it read (before the txn's own writes),
    // as its own header says; the txn's revision only when the upstream gave none.
    const r = rangeResultOf(o.response_range as Json);
    return { type: 'range', response: r.revision > 0 ? r : { ...r, revision } };
  }
  if (o.response_put !== undefined) {
    const p = o.response_put as Json;
    return {
      type: 'put',
      response: p.prev_kv !== undefined ? { revision, prevKv: kvOf(p.prev_kv) } : { revision },
    };
  }
  if (o.response_delete_range !== undefined) {
    const d = o.response_delete_range as Json;
    return {
      type: 'deleteRange',
      response: { revision, deleted: int64OfJson(d.deleted), prevKvs: kvsOf(d.prev_kvs) },
    };
  }
  return { type: 'txn', response: txnResultOf((o.response_txn ?? {}) as Json, revision) };
}

function txnResultOf(r: Json, revision: Revision): TxnResult {
  return {
    revision,
    succeeded: r.succeeded === true,
    responses: ((r.responses as Json[] | undefined) ?? []).map((o) => opResultOf(o, revision)),
  };
}

/** The store's result of `c` from the upstream's answer `r`. */
export function commandResultOf(c: Command, r: Json): CommandResult {
  const revision = rev(headerRevision(r));
  switch (c.op) {
    case 'put':
      return {
        op: 'put',
        result: r.prev_kv !== undefined ? { revision, prevKv: kvOf(r.prev_kv) } : { revision },
      };
    case 'deleteRange':
      return {
        op: 'deleteRange',
        result: { revision, deleted: int64OfJson(r.deleted), prevKvs: kvsOf(r.prev_kvs) },
      };
    case 'txn':
      return { op: 'txn', result: txnResultOf(r, revision) };
    case 'compact':
      return { op: 'compact', result: { revision } };
    case 'leaseGrant':
      return {
        op: 'leaseGrant',
        result: { revision, id: Number(r.ID ?? c.id) as LeaseId, ttl: int64OfJson(r.TTL) },
      };
    case 'leaseRevoke':
      return { op: 'leaseRevoke', result: { revision } };
    case 'alarm': {
      const alarms = ((r.alarms as Json[] | undefined) ?? []).map((a) => ({
        memberId: String(a.memberID ?? '0'),
        alarm: (a.alarm === 'CORRUPT' ? 'CORRUPT' : 'NOSPACE') as 'NOSPACE' | 'CORRUPT',
      }));
      return { op: 'alarm', result: { revision, alarms } };
    }
    case 'auth':
      return { op: 'auth', result: { revision, authRevision: 0 } };
    case 'noop':
      return { op: 'noop', result: { revision } };
  }
}

// --- errors --------------------------------------------------------------------------------

/**
 * An upstream failure as a catalogue error: etcd's own texts map to their codes (the faces
 * then answer exactly what etcd would); a call no endpoint answered is
 * ERR_UPSTREAM_UNAVAILABLE; any other refusal is ERR_UPSTREAM_ERROR with the upstream's text.
 */
export function upstreamError(e: unknown): EtceteraError {
  if (isEtceteraError(e)) return e;
  const c = e as Partial<ClientError>;
  if (typeof c.grpcCode !== 'number') return new EtceteraError('ERR_UPSTREAM_UNAVAILABLE');
  if (c.code !== undefined) {
    const detail = detailOf(c.message ?? '', c.code);
    return new EtceteraError(c.code, detail ? { detail } : {}, { cause: e });
  }
  if (c.httpStatus === 0)
    return new EtceteraError('ERR_UPSTREAM_UNAVAILABLE', { detail: c.message ?? '' }, { cause: e });
  return new EtceteraError('ERR_UPSTREAM_ERROR', { detail: c.message ?? '' }, { cause: e });
}

/** What etcetera appended after a catalogue text ("<text>: <detail>"). */
function detailOf(message: string, code: EtceteraError['code']): string | undefined {
  const text = new EtceteraError(code).message;
  return message.startsWith(`${text}: `) ? message.slice(text.length + 2) : undefined;
}
