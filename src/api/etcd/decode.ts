/**
 * Request bodies of etcd's v3 JSON API → the store's request and command types.
 *
 * The watch stream's create and cancel requests (src/api/etcd/watch, src/api/grpc/watch.ts)
 * decode here too, into the watch session's request type.
 *
 * Each decoder first checks the body's shape against its schema (schema.ts), then reads
 * the fields: base64 to bytes, int64 to numbers, enum names or numbers to the store's names.
 * An absent or null field is unset, as protobuf's JSON mapping reads it. Decoders never touch
 * a member: a body that fails here changes nothing.
 *
 * The gRPC face (src/api/grpc) decodes protobuf into the same object shape (proto field names,
 * int64 as decimal strings, enums as numbers, bytes as Uint8Array) and calls these decoders
 * with `from: 'protobuf'`: the JSON schema check is skipped (protobuf already fixed the types)
 * and every other check is shared, so both faces build identical store requests.
 */
import { EtceteraError } from '../../errors.js';
import type { AlarmRequest } from '../../server/types.js';
import type {
  Compare,
  CompareResult,
  CompareTarget,
  DeleteRangeRequest,
  PutRequest,
  RangeRequest,
  RequestOp,
  SortOrder,
  SortTarget,
  TxnRequest,
} from '../../store/types.js';
import type { EtcdCreateRequest } from '../../watchcache/etcd-session.js';
import {
  ALARM_ACTIONS,
  ALARM_TYPE_NAMES,
  COMPARE_RESULTS,
  COMPARE_TARGETS,
  checkShape,
  jsonName,
  SORT_ORDERS,
  SORT_TARGETS,
  WATCH_FILTERS,
} from './schema.js';
import { badField, decodeBytes, decodeEnum, decodeInt64, decodeUint64 } from './wire.js';

type Obj = Record<string, unknown>;

/** Where a body comes from: parsed JSON (schema-checked here) or decoded protobuf. */
export type BodySource = 'json' | 'protobuf';

/**
 * Deepest nesting of `request_txn` decoded. etcd's op budget shrinks by at least one per
 * level, so a deeper txn is always refused with "too many operations"; stopping here keeps
 * recursion bounded however large the body.
 */
const MAX_TXN_DEPTH = 130;

const ALIASES = new Map<string, string>();
function alias(name: string): string {
  let a = ALIASES.get(name);
  if (a === undefined) {
    a = jsonName(name);
    ALIASES.set(name, a);
  }
  return a;
}

/** A field by its proto name or JSON name; when both are given the later one wins, as in Go. */
export function get(o: Obj, name: string): unknown {
  const other = alias(name);
  const v = o[name];
  if (other === name || !Object.hasOwn(o, other)) return v ?? undefined;
  if (!Object.hasOwn(o, name)) return o[other] ?? undefined;
  const keys = Object.keys(o);
  return (keys.indexOf(name) > keys.indexOf(other) ? v : o[other]) ?? undefined;
}

const at = (path: string, name: string) => (path ? `${path}.${name}` : name);

function bytes(o: Obj, name: string, path: string): Uint8Array | undefined {
  const v = get(o, name);
  if (v instanceof Uint8Array) return v;
  return v === undefined ? undefined : decodeBytes(at(path, name), v as string);
}

function int(o: Obj, name: string, path: string): number | undefined {
  const v = get(o, name);
  return v === undefined ? undefined : decodeInt64(at(path, name), v as number | string);
}

function bool(o: Obj, name: string): boolean | undefined {
  return get(o, name) as boolean | undefined;
}

function enumField<N extends string>(
  o: Obj,
  name: string,
  path: string,
  names: readonly N[],
  typeName: string,
): N | undefined {
  const v = get(o, name);
  return v === undefined
    ? undefined
    : decodeEnum(at(path, name), v as string | number, names, typeName);
}

/** A lease ID: etcd's are any int64; etcetera's are 0..2^53-1 (the store's LeaseId). */
function leaseId(o: Obj, name: string, path: string): number | undefined {
  const id = int(o, name, path);
  if (id !== undefined && id < 0) {
    throw badField(at(path, name), `lease IDs are 0..2^53-1 in etcetera, got ${id}`);
  }
  return id;
}

/** Drops undefined members so requests compare and serialise cleanly. */
function compact<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

const asObj = (body: unknown): Obj => (body ?? {}) as Obj;

export function decodeRange(body: unknown, path = '', from: BodySource = 'json'): RangeRequest {
  if (!path && from === 'json') checkShape('range', body);
  const o = asObj(body);
  return compact({
    key: bytes(o, 'key', path) ?? new Uint8Array(0),
    rangeEnd: bytes(o, 'range_end', path),
    limit: int(o, 'limit', path),
    revision: int(o, 'revision', path),
    sortOrder: enumField<SortOrder>(o, 'sort_order', path, SORT_ORDERS, 'SortOrder'),
    sortTarget: enumField<SortTarget>(o, 'sort_target', path, SORT_TARGETS, 'SortTarget'),
    serializable: bool(o, 'serializable'),
    keysOnly: bool(o, 'keys_only'),
    countOnly: bool(o, 'count_only'),
    minModRevision: int(o, 'min_mod_revision', path),
    maxModRevision: int(o, 'max_mod_revision', path),
    minCreateRevision: int(o, 'min_create_revision', path),
    maxCreateRevision: int(o, 'max_create_revision', path),
  });
}

export function decodePut(body: unknown, path = '', from: BodySource = 'json'): PutRequest {
  if (!path && from === 'json') checkShape('put', body);
  const o = asObj(body);
  return compact({
    key: bytes(o, 'key', path) ?? new Uint8Array(0),
    value: bytes(o, 'value', path) ?? new Uint8Array(0),
    lease: leaseId(o, 'lease', path),
    prevKv: bool(o, 'prev_kv'),
    ignoreValue: bool(o, 'ignore_value'),
    ignoreLease: bool(o, 'ignore_lease'),
  });
}

export function decodeDeleteRange(
  body: unknown,
  path = '',
  from: BodySource = 'json',
): DeleteRangeRequest {
  if (!path && from === 'json') checkShape('deleteRange', body);
  const o = asObj(body);
  return compact({
    key: bytes(o, 'key', path) ?? new Uint8Array(0),
    rangeEnd: bytes(o, 'range_end', path),
    prevKv: bool(o, 'prev_kv'),
  });
}

function decodeCompare(o: Obj, path: string): Compare {
  const key = bytes(o, 'key', path) ?? new Uint8Array(0);
  const rangeEnd = bytes(o, 'range_end', path);
  const result =
    enumField<CompareResult>(o, 'result', path, COMPARE_RESULTS, 'Compare_CompareResult') ??
    'EQUAL';
  const target =
    enumField<CompareTarget>(o, 'target', path, COMPARE_TARGETS, 'Compare_CompareTarget') ??
    'VERSION';
  const base = rangeEnd === undefined ? { key, result } : { key, rangeEnd, result };
  // Only the operand the target names is read, as etcd reads its target_union.
  switch (target) {
    case 'VALUE':
      return { ...base, target, value: bytes(o, 'value', path) ?? new Uint8Array(0) };
    case 'VERSION':
      return { ...base, target, version: int(o, 'version', path) ?? 0 };
    case 'CREATE':
      return { ...base, target, createRevision: int(o, 'create_revision', path) ?? 0 };
    case 'MOD':
      return { ...base, target, modRevision: int(o, 'mod_revision', path) ?? 0 };
    case 'LEASE':
      return { ...base, target, lease: int(o, 'lease', path) ?? 0 };
  }
}

const OP_FIELDS = ['request_range', 'request_put', 'request_delete_range', 'request_txn'];

function decodeRequestOp(o: Obj, path: string, depth: number, from: BodySource): RequestOp {
  const given = OP_FIELDS.filter((f) => get(o, f) !== undefined);
  // etcd answers an op with no request in it with "key not found".
  if (given.length === 0) throw new EtceteraError('ERR_KEY_NOT_FOUND');
  if (given.length > 1) throw badField(path, `only one of ${OP_FIELDS.join(', ')} may be set`);
  const field = given[0] as string;
  const inner = get(o, field);
  const p = at(path, field);
  switch (field) {
    case 'request_range':
      return { type: 'range', request: decodeRange(inner, p) };
    case 'request_put':
      return { type: 'put', request: decodePut(inner, p) };
    case 'request_delete_range':
      return { type: 'deleteRange', request: decodeDeleteRange(inner, p) };
    default:
      if (from === 'json') checkShape('txn', inner, p);
      return { type: 'txn', request: decodeTxnAt(inner, p, depth + 1, from) };
  }
}

function list(o: Obj, name: string): Obj[] {
  return ((get(o, name) as unknown[] | undefined) ?? []).map((x) => (x ?? {}) as Obj);
}

function decodeTxnAt(body: unknown, path: string, depth: number, from: BodySource): TxnRequest {
  if (depth > MAX_TXN_DEPTH) throw new EtceteraError('ERR_TOO_MANY_OPS');
  const o = asObj(body);
  const ops = (name: string) =>
    list(o, name).map((op, i) => decodeRequestOp(op, at(path, `${name}.${i}`), depth, from));
  return {
    compare: list(o, 'compare').map((c, i) => decodeCompare(c, at(path, `compare.${i}`))),
    success: ops('success'),
    failure: ops('failure'),
  };
}

export function decodeTxn(body: unknown, from: BodySource = 'json'): TxnRequest {
  if (from === 'json') checkShape('txn', body);
  return decodeTxnAt(body, '', 0, from);
}

export function decodeCompaction(
  body: unknown,
  from: BodySource = 'json',
): { revision: number; physical: boolean } {
  if (from === 'json') checkShape('compaction', body);
  const o = asObj(body);
  return { revision: int(o, 'revision', '') ?? 0, physical: bool(o, 'physical') ?? false };
}

export function decodeLeaseGrant(
  body: unknown,
  from: BodySource = 'json',
): { ttl: number; id: number } {
  if (from === 'json') checkShape('leaseGrant', body);
  const o = asObj(body);
  return { ttl: int(o, 'TTL', '') ?? 0, id: leaseId(o, 'ID', '') ?? 0 };
}

export function decodeLeaseId(body: unknown, from: BodySource = 'json'): number {
  if (from === 'json') checkShape('leaseId', body);
  return leaseId(asObj(body), 'ID', '') ?? 0;
}

export function decodeLeaseTimeToLive(
  body: unknown,
  from: BodySource = 'json',
): { id: number; keys: boolean } {
  if (from === 'json') checkShape('leaseTimeToLive', body);
  const o = asObj(body);
  return { id: leaseId(o, 'ID', '') ?? 0, keys: bool(o, 'keys') ?? false };
}

export function decodeEmpty(body: unknown, from: BodySource = 'json'): void {
  if (from === 'json') checkShape('empty', body);
}

export function decodeMemberList(
  body: unknown,
  from: BodySource = 'json',
): { linearizable: boolean } {
  if (from === 'json') checkShape('memberList', body);
  return { linearizable: bool(asObj(body), 'linearizable') ?? false };
}

/** etcd's check of peer URLs: each an http or https URL with a host and a port, no path. */
export function decodeMemberAdd(
  body: unknown,
  from: BodySource = 'json',
): { peerURLs: string[]; isLearner: boolean } {
  if (from === 'json') checkShape('memberAdd', body);
  const o = asObj(body);
  const peerURLs = (get(o, 'peerURLs') as string[] | undefined) ?? [];
  if (peerURLs.length === 0 || !peerURLs.every(validPeerUrl)) {
    throw new EtceteraError('ERR_MEMBER_BAD_URLS');
  }
  return { peerURLs, isLearner: bool(o, 'isLearner') ?? false };
}

export function decodeMemberUpdate(
  body: unknown,
  from: BodySource = 'json',
): { id: string; peerURLs: string[] } {
  if (from === 'json') checkShape('memberUpdate', body);
  const o = asObj(body);
  const v = get(o, 'ID');
  const id = v === undefined ? '0' : decodeUint64('ID', v as number | string);
  // The URLs are checked by the member, after it found the member (etcd's order of errors).
  return { id, peerURLs: (get(o, 'peerURLs') as string[] | undefined) ?? [] };
}

function validPeerUrl(s: string): boolean {
  if (!/^https?:\/\/[^/?#\s@]+:[0-9]{1,5}$/.test(s)) return false;
  try {
    new URL(s);
    return true;
  } catch {
    return false;
  }
}

export function decodeMemberId(body: unknown, from: BodySource = 'json'): string {
  if (from === 'json') checkShape('memberId', body);
  const v = get(asObj(body), 'ID');
  return v === undefined ? '0' : decodeUint64('ID', v as number | string);
}

const EMPTY = new Uint8Array(0);

/**
 * A WatchCreateRequest (the watch stream's `create_request`) → the watch session's create
 * request. A start revision below 0 is refused; an empty range_end means a single key.
 */
export function decodeWatchCreate(
  body: unknown,
  path = 'create_request',
  from: BodySource = 'json',
): EtcdCreateRequest {
  if (from === 'json') checkShape('watchCreate', body, path);
  const o = asObj(body);
  const startRevision = int(o, 'start_revision', path) ?? 0;
  if (startRevision < 0) throw badField(at(path, 'start_revision'), 'must not be negative');
  const rangeEnd = bytes(o, 'range_end', path);
  const filters = ((get(o, 'filters') as (string | number)[] | undefined) ?? []).map((f, i) =>
    decodeEnum(at(path, `filters.${i}`), f, WATCH_FILTERS, 'FilterType'),
  );
  return {
    key: bytes(o, 'key', path) ?? EMPTY,
    rangeEnd: rangeEnd === undefined || rangeEnd.length === 0 ? undefined : rangeEnd,
    startRevision,
    progressNotify: bool(o, 'progress_notify') ?? false,
    filters,
    prevKv: bool(o, 'prev_kv') ?? false,
    watchId: int(o, 'watch_id', path) ?? 0,
    fragment: bool(o, 'fragment') ?? false,
  };
}

/** A WatchCancelRequest (`cancel_request`) → the watch ID it cancels. */
export function decodeWatchCancel(
  body: unknown,
  path = 'cancel_request',
  from: BodySource = 'json',
): number {
  if (from === 'json') checkShape('watchCancel', body, path);
  return int(asObj(body), 'watch_id', path) ?? 0;
}

/** etcd's AlarmRequest: action GET (the default), ACTIVATE or DEACTIVATE; alarm NONE = any. */
export function decodeAlarm(body: unknown, from: BodySource = 'json'): AlarmRequest {
  if (from === 'json') checkShape('alarm', body);
  const o = asObj(body);
  const action = enumField(o, 'action', '', ALARM_ACTIONS, 'AlarmRequest.AlarmAction') ?? 'GET';
  const alarm = enumField(o, 'alarm', '', ALARM_TYPE_NAMES, 'AlarmType') ?? 'NONE';
  const v = get(o, 'memberID');
  const memberId = v === undefined ? '0' : decodeUint64('memberID', v as number | string);
  return { action, memberId, alarm };
}

/** HashKVRequest: the revision to hash at (0: the current one). */
export function decodeHashKV(body: unknown, from: BodySource = 'json'): number {
  if (from === 'json') checkShape('hashKV', body);
  const revision = int(asObj(body), 'revision', '') ?? 0;
  if (revision < 0) throw badField('revision', `expected a revision >= 0, got ${revision}`);
  return revision;
}
