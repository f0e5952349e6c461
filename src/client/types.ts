/**
 * The client's vocabulary. Keys and values are bytes (strings are taken as UTF-8). Lease and
 * member IDs are decimal strings: etcd draws them from the whole 64-bit range, beyond what a
 * JS number holds exactly, and this client talks to etcd as well as to etcetera. Revisions
 * and counts are numbers.
 */
import type { Event, KeyValue, ResponseHeader } from '../wire/etcd-json.js';

export type KeyLike = string | Uint8Array;
/** A lease ID as etcd prints it; "0" means no lease. Numbers and bigints are accepted too. */
export type LeaseIdLike = string | number | bigint;

export type { KeyValue, ResponseHeader };

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

/** Which keys: one key, [key, rangeEnd), every key with the prefix `key`, or every key >= key. */
export interface KeySelector {
  rangeEnd?: KeyLike;
  prefix?: boolean;
  fromKey?: boolean;
}

export interface RangeOptions extends KeySelector {
  limit?: number;
  revision?: number;
  sortOrder?: SortOrder;
  sortTarget?: SortTarget;
  serializable?: boolean;
  keysOnly?: boolean;
  countOnly?: boolean;
  minModRevision?: number;
  maxModRevision?: number;
  minCreateRevision?: number;
  maxCreateRevision?: number;
}

export interface RangeResponse {
  header: ResponseHeader;
  kvs: KeyValue[];
  more: boolean;
  count: number;
}

export interface PutOptions {
  lease?: LeaseIdLike;
  prevKv?: boolean;
  ignoreValue?: boolean;
  ignoreLease?: boolean;
}

export interface PutResponse {
  header: ResponseHeader;
  prevKv?: KeyValue;
}

export interface DeleteOptions extends KeySelector {
  prevKv?: boolean;
}

export interface DeleteResponse {
  header: ResponseHeader;
  deleted: number;
  prevKvs: KeyValue[];
}

export type CompareResult = 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL';

/** A txn guard on one key or a range (KeySelector), as etcd's Compare. */
export type Compare = { key: KeyLike; result: CompareResult } & KeySelector &
  (
    | { target: 'VALUE'; value: KeyLike }
    | { target: 'VERSION'; version: number }
    | { target: 'CREATE'; createRevision: number }
    | { target: 'MOD'; modRevision: number }
    | { target: 'LEASE'; lease: LeaseIdLike }
  );

export type TxnOp =
  | { range: { key: KeyLike } & RangeOptions }
  | { put: { key: KeyLike; value: KeyLike } & PutOptions }
  | { delete: { key: KeyLike } & DeleteOptions }
  | { txn: TxnRequest };

export interface TxnRequest {
  compare?: Compare[];
  success?: TxnOp[];
  failure?: TxnOp[];
}

/** One answer inside a txn; nested answers carry only the revision they saw. */
export type TxnOpResponse =
  | { type: 'range'; revision: number; kvs: KeyValue[]; more: boolean; count: number }
  | { type: 'put'; revision: number; prevKv?: KeyValue }
  | { type: 'delete'; revision: number; deleted: number; prevKvs: KeyValue[] }
  | { type: 'txn'; succeeded: boolean; responses: TxnOpResponse[] };

export interface TxnResponse {
  header: ResponseHeader;
  succeeded: boolean;
  responses: TxnOpResponse[];
}

export interface LeaseGrantResponse {
  header: ResponseHeader;
  id: string;
  ttl: number;
}

export interface LeaseKeepAliveResponse {
  header: ResponseHeader;
  id: string;
  /** 0 when the lease does not exist (any more). */
  ttl: number;
}

export interface LeaseTimeToLiveResponse {
  header: ResponseHeader;
  id: string;
  /** Remaining seconds; -1 when the lease does not exist. */
  ttl: number;
  grantedTtl: number;
  keys: Uint8Array[];
}

export interface Member {
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

export interface MemberListResponse {
  header: ResponseHeader;
  members: Member[];
}

export interface StatusResponse {
  header: ResponseHeader;
  version: string;
  dbSize: number;
  dbSizeInUse: number;
  leader: string;
  raftIndex: number;
  raftTerm: number;
  raftAppliedIndex: number;
  errors: string[];
  isLearner: boolean;
}

// --- watch ------------------------------------------------------------------------------

export interface WatchOptions extends KeySelector {
  /** First revision to report; 0 or absent: changes from now on. */
  startRevision?: number;
  prevKv?: boolean;
  /** Leave out PUT events. */
  noPut?: boolean;
  /** Leave out DELETE events. */
  noDelete?: boolean;
  /** Ask for progress notifications (a header-only response when idle). */
  progressNotify?: boolean;
}

/** One event of a watch (src/wire/etcd-json.ts). */
export type WatchEvent = Event;

/** The events of one or more whole revisions, in revision order. */
export interface WatchBatch {
  header: ResponseHeader;
  events: WatchEvent[];
}

// --- maintenance ------------------------------------------------------------------------

export interface AlarmMember {
  memberId: string;
  alarm: 'NONE' | 'NOSPACE' | 'CORRUPT';
}

export interface AlarmResponse {
  header: ResponseHeader;
  alarms: AlarmMember[];
}

export interface HashKvResponse {
  header: ResponseHeader;
  /** CRC-32 (Castagnoli) of the keyspace's versions up to the revision, as etcd computes it. */
  hash: number;
  compactRevision: number;
}
