/**
 * A refusal from a Kubernetes API server: the HTTP code and the Status it sent (or one made
 * up from the code, as kubectl does, when the body is not a Status). It is an EtceteraError
 * with the catalogue code of the Status reason (ERR_KUBE_NOT_FOUND, ERR_KUBE_CONFLICT, ...),
 * so callers branch on `err.code` or on `err.statusCode`.
 */
import { type ErrorCode, EtceteraError } from '../../errors.js';
import type { Status } from './types.js';

const CODE_BY_REASON: Readonly<Record<string, ErrorCode>> = {
  BadRequest: 'ERR_KUBE_BAD_REQUEST',
  Forbidden: 'ERR_KUBE_FORBIDDEN',
  NotFound: 'ERR_KUBE_NOT_FOUND',
  MethodNotAllowed: 'ERR_KUBE_METHOD_NOT_ALLOWED',
  NotAcceptable: 'ERR_KUBE_NOT_ACCEPTABLE',
  AlreadyExists: 'ERR_KUBE_ALREADY_EXISTS',
  Conflict: 'ERR_KUBE_CONFLICT',
  Gone: 'ERR_KUBE_EXPIRED',
  Expired: 'ERR_KUBE_EXPIRED',
  RequestEntityTooLarge: 'ERR_KUBE_REQUEST_TOO_LARGE',
  UnsupportedMediaType: 'ERR_KUBE_UNSUPPORTED_MEDIA_TYPE',
  Invalid: 'ERR_KUBE_INVALID',
  ServiceUnavailable: 'ERR_KUBE_UNAVAILABLE',
  Timeout: 'ERR_KUBE_TIMEOUT',
};

const CODE_BY_HTTP: Readonly<Record<number, ErrorCode>> = {
  400: 'ERR_KUBE_BAD_REQUEST',
  403: 'ERR_KUBE_FORBIDDEN',
  404: 'ERR_KUBE_NOT_FOUND',
  405: 'ERR_KUBE_METHOD_NOT_ALLOWED',
  406: 'ERR_KUBE_NOT_ACCEPTABLE',
  409: 'ERR_KUBE_CONFLICT',
  410: 'ERR_KUBE_EXPIRED',
  413: 'ERR_KUBE_REQUEST_TOO_LARGE',
  415: 'ERR_KUBE_UNSUPPORTED_MEDIA_TYPE',
  422: 'ERR_KUBE_INVALID',
  503: 'ERR_KUBE_UNAVAILABLE',
  504: 'ERR_KUBE_TIMEOUT',
};

/** kubectl's wording when an error answer is not a Status. */
const GENERIC: Readonly<Record<number, [string, string]>> = {
  400: ['BadRequest', 'the server rejected our request for an unknown reason'],
  401: ['Unauthorized', 'the server has asked for the client to provide credentials'],
  403: ['Forbidden', 'forbidden'],
  404: ['NotFound', 'the server could not find the requested resource'],
  405: ['MethodNotAllowed', 'the server does not allow this method on the requested resource'],
  409: ['Conflict', 'the server reported a conflict'],
  410: ['Expired', 'the resource version is too old'],
  415: ['UnsupportedMediaType', 'the server does not support the media type'],
  422: ['Invalid', 'the server rejected our request due to an error in our request'],
  503: ['ServiceUnavailable', 'the server is currently unable to handle the request'],
  504: ['Timeout', 'the server was unable to return a response in the time allotted'],
};

export class KubeApiError extends EtceteraError {
  /** The HTTP status (410 for an ERROR event carrying code 410; 0 when no answer came). */
  readonly statusCode: number;
  readonly status: Status;

  constructor(statusCode: number, status: Status, options?: { cause?: unknown }) {
    const code: ErrorCode =
      CODE_BY_REASON[status.reason ?? ''] ?? CODE_BY_HTTP[statusCode] ?? 'ERR_KUBE_INTERNAL';
    super(code, { detail: status.message ?? `HTTP ${statusCode}` }, options);
    this.statusCode = statusCode;
    this.status = status;
  }

  get reason(): string | undefined {
    return this.status.reason;
  }

  /** True for 410 Gone/Expired: the resourceVersion or continue token is compacted away. */
  get expired(): boolean {
    return (
      this.statusCode === 410 || this.status.reason === 'Expired' || this.status.reason === 'Gone'
    );
  }
}

export function isKubeApiError(e: unknown, statusCode?: number): e is KubeApiError {
  return e instanceof KubeApiError && (statusCode === undefined || e.statusCode === statusCode);
}

function isStatus(v: unknown): v is Status {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'Status';
}

/** The error for a non-2xx answer, from its body text. */
export function errorFromResponse(statusCode: number, text: string): KubeApiError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (isStatus(body)) return new KubeApiError(statusCode, body);
  const [reason, message] = GENERIC[statusCode] ?? [
    statusCode >= 500 ? 'InternalError' : 'Unknown',
    `the server responded with the status code ${statusCode} but did not return more information`,
  ];
  return new KubeApiError(statusCode, {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    reason,
    message,
    code: statusCode,
  });
}

/** A failure to reach the server at all (refused, reset, timed out). */
export function transportFailure(cause: unknown): KubeApiError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new KubeApiError(
    0,
    { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'ServiceUnavailable', message },
    { cause },
  );
}
