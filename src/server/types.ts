/**
 * The contract between a member (src/server) and its faces (src/api): everything the HTTP
 * layers may ask of a member, and nothing of how it is built (Raft, LevelDB).
 *
 * Every answer carries a response header as etcd's does. IDs that are uint64 in etcd
 * (cluster and member IDs) are decimal strings here, as etcd's JSON API prints them.
 * Failures are EtceteraError (src/errors.ts) with stable codes; the API maps them to HTTP.
 */
import type { Registry } from 'prom-client';
import type { PermissionType } from '../store/auth.js';
import type {
  Alarm,
  Command,
  CommandResult,
  KeyRange,
  LeaseId,
  LeaseTimeToLive,
  RangeRequest,
  RangeResult,
  Revision,
  WatchableStore,
} from '../store/types.js';
import type { Cacher } from '../watchcache/cacher.js';
import type { EtcdHealthOptions, NamedCheck } from './health.js';

export interface ResponseHeader {
  clusterId: string;
  memberId: string;
  revision: Revision;
  raftTerm: number;
}

export interface MemberInfo {
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

export interface MemberStatus {
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

export interface ReadOptions {
  /** Read this member's state without a linearizability barrier (etcd's serializable). */
  serializable?: boolean;
}

/** etcd's AlarmRequest. `alarm` NONE means any type (GET) and matches nothing otherwise. */
export interface AlarmRequest {
  action: 'GET' | 'ACTIVATE' | 'DEACTIVATE';
  /** Decimal uint64; 0 when absent. */
  memberId: string;
  alarm: 'NONE' | 'NOSPACE' | 'CORRUPT';
}

/**
 * etcd's Maintenance calls beyond status: a snapshot of the store, keyspace hashes and
 * leadership transfer. Optional on MemberApi so that test doubles need not offer them.
 */
export interface MaintenanceApi {
  /**
   * A consistent copy of the member's state in etcd's snapshot format (a bbolt database,
   * src/server/etcd-snapshot.ts), taken between two applied batches: its size is known at
   * once, its bytes stream from `chunks` (iterate it to the end, or call its `return`, so
   * the store's snapshot is released).
   */
  snapshot(): Promise<{
    header: ResponseHeader;
    size: number;
    chunks: AsyncGenerator<Uint8Array, void>;
  }>;
  /** The keyspace hash at `revision` (0: current); see src/store/hash.ts. */
  hashKV(
    revision: number,
  ): Promise<{ header: ResponseHeader; hash: number; compactRevision: number; revision: number }>;
  /** Hands leadership to `targetId` (decimal); on the leader only, as etcd. */
  moveLeader(targetId: string): Promise<{ header: ResponseHeader }>;
  /**
   * etcd's Alarm: GET lists the raised alarms (of one type, or all for NONE) as this member
   * applied them; ACTIVATE and DEACTIVATE go through Raft and answer the alarm changed.
   */
  alarm(request: AlarmRequest): Promise<{ alarms: Alarm[] }>;
  /** Reclaims space in this member's database; sizes in bytes (see src/server/defrag.ts). */
  defragment(): Promise<{ header: ResponseHeader; dbSizeBefore: number; dbSizeAfter: number }>;
}

/** The member's health probes (src/server/health.ts); src/api/health.ts serves them. */
export interface HealthProbes {
  /** etcd's /health. */
  etcd(options: EtcdHealthOptions): Promise<{ health: boolean; reason: string }>;
  /** kube-apiserver's /livez checks. */
  readonly livez: readonly NamedCheck[];
  /** kube-apiserver's /readyz (and /healthz) checks. */
  readonly readyz: readonly NamedCheck[];
}

/** A key permission as the Auth service shows it. */
export interface PermissionInfo {
  permType: PermissionType;
  key: Uint8Array;
  rangeEnd: Uint8Array;
}

/**
 * Who a request comes from, once its credentials are resolved (AuthApi.identify): a user and
 * the auth revision their permissions are checked at, or nobody.
 */
export interface Caller {
  readonly user: string | undefined;
  readonly revision: number;
}

/** What a request brings to prove who it is. */
export interface Credentials {
  /** gRPC metadata `token`, or the JSON face's `Authorization` header. */
  token?: string;
  /**
   * The common name of a verified client certificate (--client-cert-auth), when the client
   * listener has one; a token, when present, wins, as in etcd.
   */
  certCommonName?: string;
}

/** etcd's Auth service over a member, and the checks every other request goes through. */
export interface AuthApi {
  /** The one place a request's identity is resolved. Throws ERR_INVALID_AUTH_TOKEN. */
  identify(credentials: Credentials): Promise<Caller>;
  /** The member as `caller` may use it: every call checks `caller`'s permissions first. */
  as(caller: Caller): MemberApi;
  status(
    caller: Caller,
  ): Promise<{ header: ResponseHeader; enabled: boolean; authRevision: number }>;
  enable(caller: Caller): Promise<{ header: ResponseHeader }>;
  disable(caller: Caller): Promise<{ header: ResponseHeader }>;
  authenticate(name: string, password: string): Promise<{ header: ResponseHeader; token: string }>;
  userAdd(
    caller: Caller,
    name: string,
    password: string,
    noPassword: boolean,
  ): Promise<{ header: ResponseHeader }>;
  userGet(caller: Caller, name: string): Promise<{ header: ResponseHeader; roles: string[] }>;
  userList(caller: Caller): Promise<{ header: ResponseHeader; users: string[] }>;
  userDelete(caller: Caller, name: string): Promise<{ header: ResponseHeader }>;
  userChangePassword(
    caller: Caller,
    name: string,
    password: string,
  ): Promise<{ header: ResponseHeader }>;
  userGrantRole(caller: Caller, name: string, role: string): Promise<{ header: ResponseHeader }>;
  userRevokeRole(caller: Caller, name: string, role: string): Promise<{ header: ResponseHeader }>;
  roleAdd(caller: Caller, name: string): Promise<{ header: ResponseHeader }>;
  roleGet(
    caller: Caller,
    name: string,
  ): Promise<{ header: ResponseHeader; permissions: PermissionInfo[] }>;
  roleList(caller: Caller): Promise<{ header: ResponseHeader; roles: string[] }>;
  roleDelete(caller: Caller, name: string): Promise<{ header: ResponseHeader }>;
  roleGrantPermission(
    caller: Caller,
    name: string,
    permission: PermissionInfo,
  ): Promise<{ header: ResponseHeader }>;
  roleRevokePermission(
    caller: Caller,
    name: string,
    key: Uint8Array,
    rangeEnd: Uint8Array,
  ): Promise<{ header: ResponseHeader }>;
  /** Throws unless `caller` may watch the range (READ on all of it). */
  checkWatch(caller: Caller, range: KeyRange): void;
}

/** What a face needs of a member. */
export interface MemberApi {
  /** The header for an answer given now (current revision, term). */
  header(): ResponseHeader;

  /** A range read: linearizable (ReadIndex barrier, then a local read) unless serializable. */
  range(
    request: RangeRequest,
    options?: ReadOptions,
  ): Promise<{ header: ResponseHeader; result: RangeResult }>;
  /**
   * A write (put, deleteRange, txn, compact, leaseGrant with an ID chosen by the member when 0,
   * leaseRevoke): checked, proposed through Raft (followers forward to the leader), and
   * answered once committed and applied on this member. Rejects with the command's
   * EtceteraError when it fails, changing nothing.
   */
  write(command: Command): Promise<{ header: ResponseHeader; result: CommandResult }>;

  /** Renews a lease (on the leader). TTL 0 when the lease does not exist, as etcd answers. */
  leaseKeepAlive(id: LeaseId): Promise<{ header: ResponseHeader; id: LeaseId; ttl: number }>;
  /** TTL -1 when the lease does not exist, as etcd answers. */
  leaseTimeToLive(
    id: LeaseId,
    keys: boolean,
  ): Promise<{ header: ResponseHeader; lease: LeaseTimeToLive }>;
  leaseLeases(): Promise<{ header: ResponseHeader; leases: LeaseId[] }>;

  memberList(): Promise<{ header: ResponseHeader; members: MemberInfo[] }>;
  memberAdd(
    peerURLs: string[],
    isLearner: boolean,
  ): Promise<{ header: ResponseHeader; member: MemberInfo; members: MemberInfo[] }>;
  memberRemove(id: string): Promise<{ header: ResponseHeader; members: MemberInfo[] }>;
  memberPromote(id: string): Promise<{ header: ResponseHeader; members: MemberInfo[] }>;
  /** Replaces a member's peer URLs (etcd's MemberUpdate). */
  memberUpdate(
    id: string,
    peerURLs: string[],
  ): Promise<{ header: ResponseHeader; members: MemberInfo[] }>;

  status(): Promise<MemberStatus>;
  /** Liveness for GET /health: healthy when there is a leader and the member is not failing. */
  health(): { health: boolean; reason: string };

  /**
   * The member's store as a watch source: its history, revisions and event subscription.
   * Faces watch through `watchCache` (built over it) and use this for what the cache
   * does not hold (reads and replay from before the cache's window).
   */
  readonly watchSource: WatchableStore;
  /**
   * The member's watch cache over `watchSource` (one per member, shared by every face so
   * each event is encoded once per format). Optional so that test doubles need not build
   * one; a real member always has it.
   */
  readonly watchCache?: Cacher;
  /** Prometheus metrics of this member (GET /metrics serves it). */
  readonly metrics: Registry;
  /** The request size limit in bytes (--max-request-bytes). */
  readonly maxRequestBytes: number;
  /** Snapshot, hash and leadership transfer (the gRPC Maintenance service). */
  readonly maintenance?: MaintenanceApi;
  /** Health probes; without them, /health and the probes use `health()` alone. */
  readonly probes?: HealthProbes;
  /**
   * Authentication and permissions (src/server/auth.ts). Absent on test doubles: every
   * request is then served as with auth disabled.
   */
  readonly auth?: AuthApi;
  /**
   * Set on a view made by `auth.as(caller)`: who the requests through it come from (watch
   * creation checks it).
   */
  readonly caller?: Caller;
}
