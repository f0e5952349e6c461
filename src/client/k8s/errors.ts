/**
 * A refusal from a Kubernetes API server: the HTTP code and the Status it sent (or one made
 * up from the code, as kubectl does, when the body is not a Status). It is an EtceteraError
 * with the catalogue code of the Status reason (ERR_KUBE_NOT_FOUND, ERR_KUBE_CONFLICT, ...),
 * so callers branch on `err.code` or on `err.statusCode`.
 */
import { type ErrorCode, EtceteraError } from '../../errors.js';
import { isStatusReason, reasonOfHttpCode, STATUS_REASONS } from '../../wire/k8s.js';
import type { Status } from './types.js';

/** The catalogue code of an answer: by its reason, else by what its HTTP code stands for. */
function codeOf(statusCode: number, reason: string | undefined): ErrorCode {
  const r = isStatusReason(reason) ? reason : reasonOfHttpCode(statusCode);
  return r === undefined ? 'ERR_KUBE_INTERNAL' : STATUS_REASONS[r].code;
}

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
    super(
      codeOf(statusCode, status.reason),
      { detail: status.message ?? `HTTP ${statusCode}` },
      options,
    );
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
