/**
 * The store's vocabulary: revisions, key-values, commands, results and events.
 *
 * Commands are plain serialisable data. The store applies them deterministically: the same
 * sequence of commands gives the same state and the same results on every member. Keys and
 * values are bytes (Uint8Array); the embedded API also accepts strings (UTF-8).
 */

import type { AuthRequest, AuthStamp } from './auth.js';

declare const revisionBrand: unique symbol;
/** A main revision of the keyspace. A fresh store is at revision 1. */
export type Revision = number & { readonly [revisionBrand]: 'Revision' };
export const Revision = (n: number): Revision => n as Revision;

declare const leaseIdBrand: unique symbol;
/** A lease ID. 0 means "no lease". Kept within Number.MAX_SAFE_INTEGER. */
export type LeaseId = number & { readonly [leaseIdBrand]: 'LeaseId' };
export const LeaseId = (n: number): LeaseId => n as LeaseId;
export const NO_LEASE = LeaseId(0);

declare const appliedIndexBrand: unique symbol;
/** The index of the last command applied (a Raft log index when a member drives the store). */
export type AppliedIndex = number & { readonly [appliedIndexBrand]: 'AppliedIndex' };
export const AppliedIndex = (n: number): AppliedIndex => n as AppliedIndex;

export type Bytes = Uint8Array;

/** One version of one key, as etcd's mvccpb.KeyValue. */
export interface KeyValue {
  readonly key: Bytes;
  readonly createRevision: Revision;
  readonly modRevision: Revision;
  /** 1 on create, +1 per put; a delete ends the generation. */
  readonly version: number;
  readonly value: Bytes;
  readonly lease: LeaseId;
}

// ---------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------

export const SortOrder = { NONE: 'NONE', ASCEND: 'ASCEND', DESCEND: 'DESCEND' } as const;
export type SortOrder = (typeof SortOrder)[keyof typeof SortOrder];

export const SortTarget = {
  KEY: 'KEY',
  VERSION: 'VERSION',
  CREATE: 'CREATE',
  MOD: 'MOD',
  VALUE: 'VALUE',
} as const;
export type SortTarget = (typeof SortTarget)[keyof typeof SortTarget];

/**
 * A range request. `rangeEnd` absent or empty: the single key `key`. `rangeEnd` = [0]: every
 * key >= key. Otherwise the half-open interval [key, rangeEnd).
 */
export interface RangeRequest {
  key: Bytes;
  rangeEnd?: Bytes;
  /** 0 or absent: no limit. */
  limit?: number;
  /** 0 or absent: the current revision. */
  revision?: number;
  sortOrder?: SortOrder;
  sortTarget?: SortTarget;
  /** Accepted for etcd compatibility; every read of the store is consistent. */
  serializable?: boolean;
  keysOnly?: boolean;
  countOnly?: boolean;
  minModRevision?: number;
  maxModRevision?: number;
  minCreateRevision?: number;
  maxCreateRevision?: number;
}

export interface PutRequest {
  key: Bytes;
  value: Bytes;
  lease?: number;
  prevKv?: boolean;
  ignoreValue?: boolean;
  ignoreLease?: boolean;
}

export interface DeleteRangeRequest {
  key: Bytes;
  rangeEnd?: Bytes;
  prevKv?: boolean;
}

export const CompareTarget = {
  VERSION: 'VERSION',
  CREATE: 'CREATE',
  MOD: 'MOD',
  VALUE: 'VALUE',
  LEASE: 'LEASE',
} as const;
export type CompareTarget = (typeof CompareTarget)[keyof typeof CompareTarget];

export const CompareResult = {
  EQUAL: 'EQUAL',
  GREATER: 'GREATER',
  LESS: 'LESS',
  NOT_EQUAL: 'NOT_EQUAL',
} as const;
export type CompareResult = (typeof CompareResult)[keyof typeof CompareResult];

/** A txn guard: `target` of every key in [key, rangeEnd) compared with the operand. */
export type Compare = {
  key: Bytes;
  rangeEnd?: Bytes;
  result: CompareResult;
} & (
  | { target: 'VALUE'; value: Bytes }
  | { target: 'VERSION'; version: number }
  | { target: 'CREATE'; createRevision: number }
  | { target: 'MOD'; modRevision: number }
  | { target: 'LEASE'; lease: number }
);

export type RequestOp =
  | { type: 'range'; request: RangeRequest }
  | { type: 'put'; request: PutRequest }
  | { type: 'deleteRange'; request: DeleteRangeRequest }
  | { type: 'txn'; request: TxnRequest };

export interface TxnRequest {
  compare: Compare[];
  success: RequestOp[];
  failure: RequestOp[];
}

/**
 * Who proposed a client write while auth may be on (auth.ts): apply checks its permissions
 * again, as etcd's auth applier does. Absent on what the member proposes itself.
 */
export interface Stamped {
  auth?: AuthStamp;
}

/** A write command: what goes through Raft and into `Store.apply`. */
export type Command =
  | ({ op: 'put' } & PutRequest & Stamped)
  | ({ op: 'deleteRange' } & DeleteRangeRequest & Stamped)
  | ({ op: 'txn' } & TxnRequest & Stamped)
  | { op: 'compact'; revision: number }
  | { op: 'leaseGrant'; id: number; ttl: number }
  | ({ op: 'leaseRevoke'; id: number } & Stamped)
  /** A change of users, roles or the enabled flag (auth.ts): replicated as etcd's auth store. */
  | { op: 'auth'; request: AuthRequest }
  /** Raises or clears an alarm (alarms.ts): replicated state, as etcd's alarm store. */
  | { op: 'alarm'; action: AlarmAction; memberId: string; alarm: AlarmType }
  /** Applied for its applied index only (a Raft no-op entry, a membership change). */
  | { op: 'noop' };

// ---------------------------------------------------------------------------------------
// Alarms
// ---------------------------------------------------------------------------------------

/**
 * etcd's alarm types. NOSPACE: a member's database passed --quota-backend-bytes; while it is
 * raised, writes that add data are refused. CORRUPT: members' keyspace hashes disagree;
 * while it is raised, every write is refused.
 */
export type AlarmType = 'NOSPACE' | 'CORRUPT';
export const ALARM_TYPES: readonly AlarmType[] = ['NOSPACE', 'CORRUPT'];
export type AlarmAction = 'activate' | 'deactivate';

/** One raised alarm: which member raised it (decimal uint64, as etcd's member IDs) and what. */
export interface Alarm {
  readonly memberId: string;
  readonly alarm: AlarmType;
}

// ---------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------

export interface RangeResult {
  /** The revision the read was served at (the store's current revision for revision 0). */
  revision: Revision;
  kvs: KeyValue[];
  more: boolean;
  count: number;
}

export interface PutResult {
  revision: Revision;
  prevKv?: KeyValue;
}

export interface DeleteRangeResult {
  revision: Revision;
  deleted: number;
  prevKvs: KeyValue[];
}

export type ResponseOp =
  | { type: 'range'; response: RangeResult }
  | { type: 'put'; response: PutResult }
  | { type: 'deleteRange'; response: DeleteRangeResult }
  | { type: 'txn'; response: TxnResult };

export interface TxnResult {
  revision: Revision;
  succeeded: boolean;
  responses: ResponseOp[];
}

export interface CompactResult {
  revision: Revision;
}

export interface LeaseGrantResult {
  revision: Revision;
  id: LeaseId;
  ttl: number;
}

export interface LeaseRevokeResult {
  revision: Revision;
}

/** The alarms the command changed: the one activated, or the one cleared (none if absent). */
export interface AlarmResult {
  revision: Revision;
  alarms: Alarm[];
}

/** The auth revision after an `auth` command. */
export interface AuthResult {
  revision: Revision;
  authRevision: number;
}

/** What `apply` returns for each command kind. */
export type CommandResult =
  | { op: 'put'; result: PutResult }
  | { op: 'deleteRange'; result: DeleteRangeResult }
  | { op: 'txn'; result: TxnResult }
  | { op: 'compact'; result: CompactResult }
  | { op: 'leaseGrant'; result: LeaseGrantResult }
  | { op: 'leaseRevoke'; result: LeaseRevokeResult }
  | { op: 'alarm'; result: AlarmResult }
  | { op: 'auth'; result: AuthResult }
  | { op: 'noop'; result: { revision: Revision } };

// ---------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------

export type EventType = 'PUT' | 'DELETE';

/**
 * One change. For DELETE, `kv` holds only the key and the deleting revision as modRevision
 * (createRevision and version 0, empty value), as etcd reports it. `prevKv` is the key's
 * version before the change, when it had one.
 */
export interface Event {
  readonly type: EventType;
  readonly kv: KeyValue;
  readonly prevKv?: KeyValue;
}

/** Every change of one revision, in sub-revision order. Delivered in revision order. */
export interface EventBatch {
  readonly revision: Revision;
  readonly events: readonly Event[];
}

// ---------------------------------------------------------------------------------------
// Leases
// ---------------------------------------------------------------------------------------

export interface LeaseTimeToLive {
  id: LeaseId;
  /** Remaining seconds (truncated), or -1 when the lease does not exist. */
  ttl: number;
  grantedTtl: number;
  keys: Bytes[];
}

/** A time source in milliseconds. Injected so tests can step time. */
export interface Clock {
  now(): number;
}

// ---------------------------------------------------------------------------------------
// What the watch cache and the server see of the store
// ---------------------------------------------------------------------------------------

/** A key or an interval of keys, with range_end as in {@link RangeRequest}. */
export interface KeyRange {
  key: Bytes;
  rangeEnd?: Bytes;
}

/**
 * The read-and-watch face of the store, all that src/watchcache needs.
 *
 * Ordering contract: `subscribe` listeners are called synchronously, once per applied write
 * revision, in revision order, after the revision is durable and visible to `range`. A listener
 * must not throw and must not block (queue the work instead). `currentRevision` is at least
 * the batch's revision when the listener runs: the batches of one group commit all become
 * visible before the first listener call.
 */
export interface WatchableStore {
  /** The newest revision (1 for a fresh store). */
  readonly currentRevision: Revision;
  /** The revision the store is compacted to (0 if never compacted). Reads below it fail. */
  readonly compactRevision: Revision;
  range(request: RangeRequest): Promise<RangeResult>;
  /**
   * The history of `range` from revision `from` (inclusive) up to the current revision at the
   * time of the call, one batch per revision that touched the range, with prevKv filled in.
   * Fails with ERR_COMPACTED when `from` < compactRevision, ERR_FUTURE_REV when
   * `from` > currentRevision + 1. Reads a consistent snapshot with bounded memory.
   */
  history(from: Revision, range: KeyRange): AsyncIterable<EventBatch>;
  /** Calls `listener` with every batch applied from now on. Returns the unsubscribe function. */
  subscribe(listener: (batch: EventBatch) => void): () => void;
  /**
   * Calls `listener` when the whole store was replaced (a Raft snapshot was installed): the
   * revision may jump and history before it may be gone, so a cache must reload from `range`.
   */
  onReset(listener: (revision: Revision) => void): () => void;
}
