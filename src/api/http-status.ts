/**
 * The one table from error codes to HTTP status.
 *
 * etcd's JSON API is a grpc-gateway in front of its gRPC server; the gateway (v1, as
 * etcd 3.4 ships it) turns a gRPC status code into an HTTP status with a fixed table,
 * `HTTP_STATUS_BY_GRPC` below. Every ERR_* code is listed explicitly in `HTTP_STATUS`, so a
 * reviewer sees the status of each error in one place; entries agree with the gateway's
 * table for the code's gRPC number except where the comment says why not. A code someone
 * adds to src/errors.ts without a row here still gets the gateway's status (the fallback),
 * and test/api/http-status.test.ts points at the missing row.
 */
import { ERRORS, type ErrorCode, GrpcCode } from '../errors.js';

/** grpc-gateway v1's HTTPStatusFromCode. */
export const HTTP_STATUS_BY_GRPC: Readonly<Record<GrpcCode, number>> = {
  [GrpcCode.OK]: 200,
  [GrpcCode.Canceled]: 408,
  [GrpcCode.Unknown]: 500,
  [GrpcCode.InvalidArgument]: 400,
  [GrpcCode.DeadlineExceeded]: 504,
  [GrpcCode.NotFound]: 404,
  [GrpcCode.AlreadyExists]: 409,
  [GrpcCode.PermissionDenied]: 403,
  [GrpcCode.ResourceExhausted]: 429,
  [GrpcCode.FailedPrecondition]: 412,
  [GrpcCode.Aborted]: 409,
  [GrpcCode.OutOfRange]: 400,
  [GrpcCode.Unimplemented]: 501,
  [GrpcCode.Internal]: 500,
  [GrpcCode.Unavailable]: 503,
  [GrpcCode.DataLoss]: 500,
  [GrpcCode.Unauthenticated]: 401,
};

/** HTTP status of every error etcetera raises, as etcd's gateway would answer it. */
export const HTTP_STATUS: { readonly [C in ErrorCode]?: number } = {
  ERR_EMPTY_KEY: 400,
  ERR_KEY_NOT_FOUND: 400,
  ERR_VALUE_PROVIDED: 400,
  ERR_LEASE_PROVIDED: 400,
  ERR_TOO_MANY_OPS: 400,
  ERR_DUPLICATE_KEY: 400,
  ERR_REQUEST_TOO_LARGE: 400,
  ERR_INVALID_ARGUMENT: 400,
  ERR_COMPACTED: 400,
  ERR_FUTURE_REV: 400,
  ERR_LEASE_NOT_FOUND: 404,
  ERR_LEASE_EXIST: 412,
  ERR_LEASE_TTL_TOO_LARGE: 400,
  ERR_RAFT_COMPACTED: 400,
  ERR_RAFT_UNAVAILABLE: 400,
  ERR_RAFT_SNAPSHOT_OUT_OF_DATE: 412,
  ERR_RAFT_SNAPSHOT_TEMPORARILY_UNAVAILABLE: 503,
  ERR_RAFT_PROPOSAL_DROPPED: 503,
  ERR_RAFT_CONF_CHANGE_PENDING: 412,
  ERR_RAFT_INVALID_CONF_CHANGE: 400,
  ERR_NO_LEADER: 503,
  ERR_LEADER_CHANGED: 503,
  ERR_TIMEOUT: 503,
  ERR_MALFORMED_JSON: 400,
  ERR_BAD_FIELD: 400,
  ERR_UNKNOWN_FIELD: 400,
  ERR_ROUTE_NOT_FOUND: 404,
  // Unimplemented would be 501; a wrong method on a known path is 405, as etcd's mux says.
  ERR_METHOD_NOT_ALLOWED: 405,
  ERR_MEMBER_BAD_URLS: 400,
  ERR_MEMBER_EXIST: 412,
  ERR_PEER_URL_EXIST: 412,
  ERR_MEMBER_NOT_FOUND: 404,
  ERR_MEMBER_NOT_LEARNER: 412,
  ERR_TOO_MANY_LEARNERS: 412,
  ERR_NOT_SUPPORTED_FOR_LEARNER: 412,
  ERR_UNHEALTHY: 503,
  // The Kubernetes face answers with Kubernetes' own statuses (the Status reasons table in
  // src/wire/k8s.ts, which the http-status test holds to these rows), not the gateway's.
  ERR_KUBE_BAD_REQUEST: 400,
  ERR_KUBE_FORBIDDEN: 403,
  ERR_KUBE_NOT_FOUND: 404,
  ERR_KUBE_METHOD_NOT_ALLOWED: 405,
  ERR_KUBE_NOT_ACCEPTABLE: 406,
  ERR_KUBE_ALREADY_EXISTS: 409,
  ERR_KUBE_CONFLICT: 409,
  ERR_KUBE_EXPIRED: 410,
  ERR_KUBE_REQUEST_TOO_LARGE: 413,
  ERR_KUBE_UNSUPPORTED_MEDIA_TYPE: 415,
  ERR_KUBE_INVALID: 422,
  ERR_KUBE_INTERNAL: 500,
  ERR_KUBE_UNAVAILABLE: 503,
  ERR_KUBE_TIMEOUT: 504,
  // Watch cache (src/watchcache). A watch from before the cache's window is Kubernetes'
  // 410 Gone (the client lists again); etcd's face reports it in-stream as a compaction.
  ERR_WATCH_TOO_OLD: 410,
  ERR_WATCH_RANGE_EMPTY: 400,
  ERR_WATCH_DUPLICATE_ID: 400,
  ERR_CACHE_NOT_FRESH: 504,
  ERR_CLOSED: 503,
  ERR_CORRUPT: 500,
  ERR_STORAGE: 500,
  // Cluster safety: refused membership changes and member starts.
  ERR_NOT_ENOUGH_STARTED_MEMBERS: 412,
  ERR_MEMBER_BOOTSTRAPPED: 412,
  // Storage integrity: only a starting member raises these, so no client sees them.
  ERR_DATA_CORRUPT: 500,
  ERR_DATA_DIR_INCOMPLETE: 500,
  // HTTP edges (src/api/access.ts): a browser page from a foreign origin, a Host outside the
  // member's names. etcd answers the second with 421; one status for both keeps the rule.
  ERR_ORIGIN_NOT_ALLOWED: 403,
  ERR_HOST_NOT_ALLOWED: 403,
  // etcd watch stream: answered in-stream (a refused create); 429 if it ever ends a request.
  ERR_WATCH_LIMIT: 429,
  // etcd gRPC API (src/api/grpc): gateway statuses, should a JSON route ever raise them.
  ERR_NOT_LEADER: 412,
  ERR_BAD_LEADER_TRANSFEREE: 412,
  ERR_AUTH_NOT_ENABLED: 412,
  ERR_USER_NOT_FOUND: 412,
  ERR_ROLE_NOT_FOUND: 412,
  ERR_GRPC_UNIMPLEMENTED: 501,
  ERR_GRPC_BAD_MESSAGE: 500,
  // --- client: snapshot (raised by the client, never sent by a server) ---
  ERR_SNAPSHOT_INTEGRITY: 500,
  // --- snapshots in etcd's bbolt format (raised by the snapshot tools and the snapshot stream) ---
  ERR_BOLT_CORRUPT: 500,
  ERR_BOLT_TRUNCATED: 500,
  ERR_BOLT_WRITE: 500,
  ERR_SNAPSHOT_LAYOUT: 400,
  ERR_RESTORE_DATA_DIR_EXISTS: 409,
  // --- space quota, alarms and the corruption check: the gateway's statuses ---
  ERR_NO_SPACE: 429,
  ERR_CORRUPT_CLUSTER: 500,
  ERR_PEER_HASH_MISMATCH: 500,
  // --- limits under abuse: 408 as HTTP says for a request that did not arrive in time ---
  ERR_BODY_TIMEOUT: 408,
  ERR_NESTING_TOO_DEEP: 400,
  // Kubernetes face: authentication
  ERR_KUBE_UNAUTHORIZED: 401,
  // --- TLS for clients and peers (raised at member start, never sent to a client) ---
  ERR_TLS_FILE: 400,
  // --- etcd authentication ---
  ERR_USER_EMPTY: 400,
  ERR_USER_ALREADY_EXIST: 412,
  ERR_ROLE_EMPTY: 400,
  ERR_ROLE_ALREADY_EXIST: 412,
  ERR_ROLE_NOT_GRANTED: 412,
  ERR_PERMISSION_NOT_GRANTED: 412,
  ERR_ROOT_USER_NOT_EXIST: 412,
  ERR_ROOT_ROLE_NOT_EXIST: 412,
  ERR_AUTH_FAILED: 400,
  ERR_PERMISSION_DENIED: 403,
  ERR_INVALID_AUTH_TOKEN: 401,
  ERR_INVALID_AUTH_MGMT: 400,
  ERR_AUTH_OLD_REVISION: 400,
  // the API tier and worker processes
  ERR_UPSTREAM_UNAVAILABLE: 503,
  ERR_UPSTREAM_ERROR: 500,
  ERR_TIER_NOT_SUPPORTED: 501,
  ERR_WORKER_START: 503,
};

/** The HTTP status for an error code: its row above, else the gateway's status for its gRPC code. */
export function httpStatusOf(code: ErrorCode): number {
  return HTTP_STATUS[code] ?? HTTP_STATUS_BY_GRPC[ERRORS[code].grpc];
}

/** The HTTP status for a bare gRPC code (errors that are not EtceteraError). */
export function httpStatusOfGrpc(grpc: GrpcCode): number {
  return HTTP_STATUS_BY_GRPC[grpc] ?? 500;
}

const REASON: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The reason phrase grpc-gateway puts in `http_status` of a streamed error. */
export function reasonPhrase(status: number): string {
  return REASON[status] ?? 'Error';
}
