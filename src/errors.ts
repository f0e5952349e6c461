/**
 * The one error catalogue of etcetera.
 *
 * Every error any layer raises on purpose is an {@link EtceteraError} with a stable `code`
 * from {@link ERRORS}. Each entry carries the gRPC status code number etcd uses for it
 * (the etcd JSON API reports that number in `code`) and, where etcd has one, etcd's exact
 * message text, so that clients written for etcd recognise the error. docs/errors.md lists
 * every code; a test keeps the two in step.
 */

/** gRPC status codes, as etcd's JSON gateway reports them. */
export const GrpcCode = {
  OK: 0,
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

interface ErrorSpec {
  readonly grpc: GrpcCode;
  readonly message: string;
}

/**
 * The catalogue. Keys are the stable codes. Messages starting with `etcdserver:` or `mvcc:`
 * are etcd's own texts, kept byte for byte.
 */
export const ERRORS = {
  // --- store: requests ---
  ERR_EMPTY_KEY: { grpc: GrpcCode.InvalidArgument, message: 'etcdserver: key is not provided' },
  ERR_KEY_NOT_FOUND: { grpc: GrpcCode.InvalidArgument, message: 'etcdserver: key not found' },
  ERR_VALUE_PROVIDED: { grpc: GrpcCode.InvalidArgument, message: 'etcdserver: value is provided' },
  ERR_LEASE_PROVIDED: { grpc: GrpcCode.InvalidArgument, message: 'etcdserver: lease is provided' },
  ERR_TOO_MANY_OPS: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcdserver: too many operations in txn request',
  },
  ERR_DUPLICATE_KEY: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcdserver: duplicate key given in txn request',
  },
  ERR_REQUEST_TOO_LARGE: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcdserver: request is too large',
  },
  ERR_INVALID_ARGUMENT: { grpc: GrpcCode.InvalidArgument, message: 'etcetera: invalid argument' },
  // --- store: revisions ---
  ERR_COMPACTED: {
    grpc: GrpcCode.OutOfRange,
    message: 'etcdserver: mvcc: required revision has been compacted',
  },
  ERR_FUTURE_REV: {
    grpc: GrpcCode.OutOfRange,
    message: 'etcdserver: mvcc: required revision is a future revision',
  },
  // --- store: leases ---
  ERR_LEASE_NOT_FOUND: {
    grpc: GrpcCode.NotFound,
    message: 'etcdserver: requested lease not found',
  },
  ERR_LEASE_EXIST: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: lease already exists',
  },
  ERR_LEASE_TTL_TOO_LARGE: {
    grpc: GrpcCode.OutOfRange,
    message: 'etcdserver: too large lease TTL',
  },
  // --- watch cache (src/watchcache) ---
  ERR_WATCH_TOO_OLD: {
    grpc: GrpcCode.OutOfRange,
    message: 'etcetera: required revision is older than the watch cache window',
  },
  ERR_WATCH_RANGE_EMPTY: {
    grpc: GrpcCode.InvalidArgument,
    message: 'mvcc: watcher range is empty',
  },
  ERR_WATCH_DUPLICATE_ID: {
    grpc: GrpcCode.InvalidArgument,
    message: 'mvcc: duplicate watch ID provided on the WatchStream',
  },
  ERR_CACHE_NOT_FRESH: {
    grpc: GrpcCode.DeadlineExceeded,
    message: 'etcetera: the watch cache did not reach the requested revision in time',
  },
  // --- raft core (src/raft) ---
  ERR_RAFT_COMPACTED: {
    grpc: GrpcCode.OutOfRange,
    message: 'raft: requested index is unavailable due to compaction',
  },
  ERR_RAFT_UNAVAILABLE: {
    grpc: GrpcCode.OutOfRange,
    message: 'raft: requested entry at index is unavailable',
  },
  ERR_RAFT_SNAPSHOT_OUT_OF_DATE: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'raft: requested index is older than the existing snapshot',
  },
  ERR_RAFT_SNAPSHOT_TEMPORARILY_UNAVAILABLE: {
    grpc: GrpcCode.Unavailable,
    message: 'raft: snapshot is temporarily unavailable',
  },
  ERR_RAFT_PROPOSAL_DROPPED: { grpc: GrpcCode.Unavailable, message: 'raft proposal dropped' },
  ERR_RAFT_CONF_CHANGE_PENDING: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'raft: an earlier membership change is not applied yet',
  },
  ERR_RAFT_INVALID_CONF_CHANGE: {
    grpc: GrpcCode.InvalidArgument,
    message: 'raft: invalid membership change',
  },
  // --- raft driver (src/raft/driver): etcd's own texts for the same situations ---
  ERR_NO_LEADER: { grpc: GrpcCode.Unavailable, message: 'etcdserver: no leader' },
  ERR_LEADER_CHANGED: { grpc: GrpcCode.Unavailable, message: 'etcdserver: leader changed' },
  ERR_TIMEOUT: { grpc: GrpcCode.Unavailable, message: 'etcdserver: request timed out' },
  // --- etcd JSON API (src/api): request decoding and routing ---
  ERR_MALFORMED_JSON: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcetera: request body is not valid JSON',
  },
  ERR_BAD_FIELD: { grpc: GrpcCode.InvalidArgument, message: 'etcetera: invalid request field' },
  ERR_UNKNOWN_FIELD: { grpc: GrpcCode.InvalidArgument, message: 'etcetera: unknown request field' },
  ERR_ROUTE_NOT_FOUND: { grpc: GrpcCode.NotFound, message: 'etcetera: no such API route' },
  ERR_METHOD_NOT_ALLOWED: {
    grpc: GrpcCode.Unimplemented,
    message: 'etcetera: method not allowed on this route',
  },
  ERR_MEMBER_BAD_URLS: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcdserver: given member URLs are invalid',
  },
  // --- server (src/server): membership and member state, etcd's texts ---
  ERR_MEMBER_EXIST: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: member ID already exist',
  },
  ERR_PEER_URL_EXIST: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: Peer URLs already exists',
  },
  ERR_MEMBER_NOT_FOUND: { grpc: GrpcCode.NotFound, message: 'etcdserver: member not found' },
  ERR_MEMBER_NOT_LEARNER: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: can only promote a learner member',
  },
  ERR_TOO_MANY_LEARNERS: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: too many learner members in cluster',
  },
  ERR_NOT_SUPPORTED_FOR_LEARNER: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: rpc not supported for learner',
  },
  ERR_UNHEALTHY: { grpc: GrpcCode.Unavailable, message: 'etcdserver: unhealthy cluster' },
  // --- Kubernetes face (src/api/k8s): one code per Status reason it answers with; the
  // Kubernetes message (pods "x" not found, ...) travels in the error's detail ---
  ERR_KUBE_BAD_REQUEST: { grpc: GrpcCode.InvalidArgument, message: 'kubernetes: bad request' },
  ERR_KUBE_FORBIDDEN: { grpc: GrpcCode.PermissionDenied, message: 'kubernetes: forbidden' },
  ERR_KUBE_NOT_FOUND: { grpc: GrpcCode.NotFound, message: 'kubernetes: not found' },
  ERR_KUBE_ALREADY_EXISTS: { grpc: GrpcCode.AlreadyExists, message: 'kubernetes: already exists' },
  ERR_KUBE_CONFLICT: { grpc: GrpcCode.Aborted, message: 'kubernetes: conflict' },
  ERR_KUBE_EXPIRED: { grpc: GrpcCode.OutOfRange, message: 'kubernetes: resource version expired' },
  ERR_KUBE_INVALID: { grpc: GrpcCode.InvalidArgument, message: 'kubernetes: invalid object' },
  ERR_KUBE_METHOD_NOT_ALLOWED: {
    grpc: GrpcCode.Unimplemented,
    message: 'kubernetes: method not allowed',
  },
  ERR_KUBE_NOT_ACCEPTABLE: {
    grpc: GrpcCode.InvalidArgument,
    message: 'kubernetes: not acceptable',
  },
  ERR_KUBE_UNSUPPORTED_MEDIA_TYPE: {
    grpc: GrpcCode.InvalidArgument,
    message: 'kubernetes: unsupported media type',
  },
  ERR_KUBE_REQUEST_TOO_LARGE: {
    grpc: GrpcCode.ResourceExhausted,
    message: 'kubernetes: request entity too large',
  },
  ERR_KUBE_TIMEOUT: { grpc: GrpcCode.DeadlineExceeded, message: 'kubernetes: timeout' },
  ERR_KUBE_UNAVAILABLE: { grpc: GrpcCode.Unavailable, message: 'kubernetes: service unavailable' },
  ERR_KUBE_INTERNAL: { grpc: GrpcCode.Internal, message: 'kubernetes: internal error' },
  // --- lifecycle ---
  ERR_CLOSED: { grpc: GrpcCode.Unavailable, message: 'etcdserver: server stopped' },
  ERR_CORRUPT: { grpc: GrpcCode.Internal, message: 'etcetera: stored data is corrupt' },
  ERR_STORAGE: { grpc: GrpcCode.Internal, message: 'etcetera: storage write failed' },
  // --- cluster safety (membership changes, member start) ---
  ERR_NOT_ENOUGH_STARTED_MEMBERS: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: re-configuration failed due to not enough started members',
  },
  ERR_MEMBER_BOOTSTRAPPED: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcetera: member has already been bootstrapped',
  },
  // --- storage integrity: a member's data dir at start ---
  ERR_DATA_CORRUPT: {
    grpc: GrpcCode.Internal,
    message: 'etcetera: the data dir lost or altered data it had made durable',
  },
  ERR_DATA_DIR_INCOMPLETE: {
    grpc: GrpcCode.Internal,
    message: 'etcetera: the data dir is missing files of its database',
  },
  // --- HTTP edges: browsers and DNS rebinding ---
  ERR_ORIGIN_NOT_ALLOWED: {
    grpc: GrpcCode.PermissionDenied,
    message: 'etcetera: requests from this Origin are not allowed (see --cors)',
  },
  ERR_HOST_NOT_ALLOWED: {
    grpc: GrpcCode.PermissionDenied,
    message: "etcetera: this Host is not one of the member's names (see --host-whitelist)",
  },
  // --- etcd watch stream (src/watchcache/etcd-session.ts) ---
  ERR_WATCH_LIMIT: {
    grpc: GrpcCode.ResourceExhausted,
    message: 'etcetera: too many watches on this stream',
  },
  // --- etcd gRPC API (src/api/grpc): maintenance, auth and what etcetera does not offer ---
  ERR_NOT_LEADER: { grpc: GrpcCode.FailedPrecondition, message: 'etcdserver: not leader' },
  ERR_BAD_LEADER_TRANSFEREE: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: bad leader transferee',
  },
  ERR_AUTH_NOT_ENABLED: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: authentication is not enabled',
  },
  ERR_USER_NOT_FOUND: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: user name not found',
  },
  ERR_ROLE_NOT_FOUND: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: role name not found',
  },
  ERR_GRPC_UNIMPLEMENTED: { grpc: GrpcCode.Unimplemented, message: 'etcetera: not implemented' },
  ERR_GRPC_BAD_MESSAGE: {
    grpc: GrpcCode.Internal,
    message: 'grpc: error unmarshalling request',
  },
  // --- client: snapshot ---
  ERR_SNAPSHOT_INTEGRITY: {
    grpc: GrpcCode.Internal,
    message: 'etcetera: snapshot integrity check failed',
  },
  // --- snapshots in etcd's bbolt format (src/bbolt, snapshot restore) ---
  ERR_BOLT_CORRUPT: {
    grpc: GrpcCode.Internal,
    message: 'etcetera: invalid database',
  },
  ERR_BOLT_TRUNCATED: {
    grpc: GrpcCode.Internal,
    message: 'etcetera: bbolt database is truncated',
  },
  ERR_BOLT_WRITE: {
    grpc: GrpcCode.Internal,
    message: 'etcetera: cannot write this bbolt database',
  },
  ERR_SNAPSHOT_LAYOUT: {
    grpc: GrpcCode.InvalidArgument,
    message: "etcetera: the database does not hold etcd's snapshot layout",
  },
  ERR_RESTORE_DATA_DIR_EXISTS: {
    grpc: GrpcCode.AlreadyExists,
    message: 'etcetera: the restore target data dir already exists',
  },
  // --- space quota, alarms and the corruption check (src/store/alarms.ts, src/server) ---
  ERR_NO_SPACE: {
    grpc: GrpcCode.ResourceExhausted,
    message: 'etcdserver: mvcc: database space exceeded',
  },
  ERR_CORRUPT_CLUSTER: { grpc: GrpcCode.DataLoss, message: 'etcdserver: corrupt cluster' },
  ERR_PEER_HASH_MISMATCH: {
    grpc: GrpcCode.DataLoss,
    message: 'etcetera: found data inconsistency with peers',
  },
  // --- limits under abuse (README, "Limits") ---
  ERR_BODY_TIMEOUT: {
    grpc: GrpcCode.DeadlineExceeded,
    message: 'etcetera: the request body did not arrive in time',
  },
  ERR_NESTING_TOO_DEEP: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcetera: the request body nests too deeply',
  },
  // --- Kubernetes face: authentication, RBAC and audit (src/api/k8s/auth.ts) ---
  ERR_KUBE_UNAUTHORIZED: { grpc: GrpcCode.Unauthenticated, message: 'kubernetes: unauthorized' },
  // --- TLS for clients and peers (src/server/tls.ts) ---
  ERR_TLS_FILE: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcetera: cannot load a TLS certificate, key or CA file',
  },
  // --- etcd authentication (users, roles, tokens, permissions) ---
  ERR_USER_EMPTY: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcdserver: user name is empty',
  },
  ERR_USER_ALREADY_EXIST: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: user name already exists',
  },
  ERR_ROLE_EMPTY: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcdserver: role name is empty',
  },
  ERR_ROLE_ALREADY_EXIST: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: role name already exists',
  },
  ERR_ROLE_NOT_GRANTED: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: role is not granted to the user',
  },
  ERR_PERMISSION_NOT_GRANTED: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: permission is not granted to the role',
  },
  ERR_ROOT_USER_NOT_EXIST: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: root user does not exist',
  },
  ERR_ROOT_ROLE_NOT_EXIST: {
    grpc: GrpcCode.FailedPrecondition,
    message: 'etcdserver: root user does not have root role',
  },
  ERR_AUTH_FAILED: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcdserver: authentication failed, invalid user ID or password',
  },
  ERR_PERMISSION_DENIED: {
    grpc: GrpcCode.PermissionDenied,
    message: 'etcdserver: permission denied',
  },
  ERR_INVALID_AUTH_TOKEN: {
    grpc: GrpcCode.Unauthenticated,
    message: 'etcdserver: invalid auth token',
  },
  ERR_INVALID_AUTH_MGMT: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcdserver: invalid auth management',
  },
  ERR_AUTH_OLD_REVISION: {
    grpc: GrpcCode.InvalidArgument,
    message: 'etcdserver: revision of auth store is old',
  },
  // --- the API tier (src/tier): a member's faces over a remote cluster ---
  ERR_UPSTREAM_UNAVAILABLE: {
    grpc: GrpcCode.Unavailable,
    message: 'etcetera: no upstream endpoint answered',
  },
  ERR_UPSTREAM_ERROR: {
    grpc: GrpcCode.Unknown,
    message: 'etcetera: the upstream cluster refused the request',
  },
  ERR_TIER_NOT_SUPPORTED: {
    grpc: GrpcCode.Unimplemented,
    message: 'etcetera: not supported through the API tier',
  },
  // --- worker processes (--workers) ---
  ERR_WORKER_START: {
    grpc: GrpcCode.Unavailable,
    message: 'etcetera: a worker process failed to start',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** Structured fields an error may carry beside its message. */
export interface ErrorDetails {
  /** For ERR_COMPACTED: the revision the store is compacted to. */
  compactRevision?: number;
  /** For ERR_FUTURE_REV and ERR_COMPACTED: the store's current revision. */
  currentRevision?: number;
  /** Free-form detail appended to the message (for example which field is wrong). */
  detail?: string;
}

export class EtceteraError extends Error {
  override readonly name = 'EtceteraError';
  readonly code: ErrorCode;
  readonly grpcCode: GrpcCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    const spec: ErrorSpec = ERRORS[code];
    super(details.detail ? `${spec.message}: ${details.detail}` : spec.message, options);
    this.code = code;
    this.grpcCode = spec.grpc;
    this.details = details;
  }

  /** The etcd text without any detail suffix (what etcd itself would send). */
  get etcdMessage(): string {
    return ERRORS[this.code].message;
  }
}

export function isEtceteraError(e: unknown, code?: ErrorCode): e is EtceteraError {
  return e instanceof EtceteraError && (code === undefined || e.code === code);
}

export function errorCodes(): ErrorCode[] {
  return Object.keys(ERRORS) as ErrorCode[];
}
