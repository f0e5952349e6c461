/**
 * Kubernetes' JSON wire forms shared by the server's Kubernetes face (src/api/k8s) and the
 * client (src/client/k8s): ObjectMeta, ListMeta, Status, and the one table from a Status
 * reason to its HTTP code and to the catalogue code (src/errors.ts) an error with that
 * reason carries. The codes are checked against the catalogue where errors are built (the
 * constructor takes only catalogue codes) and by test/wire/k8s.test.ts; this folder itself
 * imports nothing else in src.
 */
/** A JSON value as JSON.parse returns it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** metav1.ObjectMeta, the fields this project reads or writes. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  /** Opaque to clients: compare for equality only. */
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: JsonObject[];
  managedFields?: JsonObject[];
}

/** metav1.ListMeta. */
export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

/** metav1.StatusCause. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** metav1.StatusDetails. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** metav1.Status as a reader takes it: everything but `kind` may be absent. */
export interface Status {
  kind: 'Status';
  apiVersion: string;
  metadata?: ListMeta;
  status?: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code?: number;
}

/**
 * The Status reasons: the HTTP code Kubernetes answers each with, and the catalogue code of
 * an error with that reason. Where two reasons share an HTTP code, the first listed is the
 * one a bare status code means (`reasonOfHttpCode`): 409 is Conflict, 410 Expired.
 */
export const STATUS_REASONS = {
  BadRequest: { http: 400, code: 'ERR_KUBE_BAD_REQUEST' },
  Unauthorized: { http: 401, code: 'ERR_KUBE_UNAUTHORIZED' },
  Forbidden: { http: 403, code: 'ERR_KUBE_FORBIDDEN' },
  NotFound: { http: 404, code: 'ERR_KUBE_NOT_FOUND' },
  MethodNotAllowed: { http: 405, code: 'ERR_KUBE_METHOD_NOT_ALLOWED' },
  NotAcceptable: { http: 406, code: 'ERR_KUBE_NOT_ACCEPTABLE' },
  Conflict: { http: 409, code: 'ERR_KUBE_CONFLICT' },
  AlreadyExists: { http: 409, code: 'ERR_KUBE_ALREADY_EXISTS' },
  Expired: { http: 410, code: 'ERR_KUBE_EXPIRED' },
  Gone: { http: 410, code: 'ERR_KUBE_EXPIRED' },
  RequestEntityTooLarge: { http: 413, code: 'ERR_KUBE_REQUEST_TOO_LARGE' },
  UnsupportedMediaType: { http: 415, code: 'ERR_KUBE_UNSUPPORTED_MEDIA_TYPE' },
  Invalid: { http: 422, code: 'ERR_KUBE_INVALID' },
  InternalError: { http: 500, code: 'ERR_KUBE_INTERNAL' },
  ServiceUnavailable: { http: 503, code: 'ERR_KUBE_UNAVAILABLE' },
  Timeout: { http: 504, code: 'ERR_KUBE_TIMEOUT' },
} as const satisfies Record<string, { http: number; code: `ERR_KUBE_${string}` }>;
export type StatusReason = keyof typeof STATUS_REASONS;

export function isStatusReason(s: string | undefined): s is StatusReason {
  return s !== undefined && Object.hasOwn(STATUS_REASONS, s);
}

const REASON_OF_HTTP = new Map<number, StatusReason>();
for (const [reason, spec] of Object.entries(STATUS_REASONS) as [StatusReason, { http: number }][]) {
  if (!REASON_OF_HTTP.has(spec.http)) REASON_OF_HTTP.set(spec.http, reason);
}

/** The reason a bare HTTP status code stands for, if it has one. */
export function reasonOfHttpCode(http: number): StatusReason | undefined {
  return REASON_OF_HTTP.get(http);
}
