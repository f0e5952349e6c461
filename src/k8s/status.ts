/**
 * Kubernetes Status errors: every non-2xx answer of the face is a Status object whose `code`
 * equals the HTTP status, with Kubernetes' reason and message texts (kubectl builds its
 * output from them: `Error from server (<reason>): <message>`).
 *
 * StatusError is an EtceteraError (codes ERR_KUBE_*), so the one catalogue in src/errors.ts
 * stays complete; `status` is the body to send.
 */
import { EtceteraError, isEtceteraError } from '../errors.js';
import {
  STATUS_REASONS,
  type StatusDetails,
  type StatusReason,
  type Status as WireStatus,
} from '../wire/k8s.js';
import { KubeLibError } from './errors.js';
import { qualifiedResource } from './types.js';

export type { StatusDetails };

/** The Status the face sends: always complete (the wire form lets a reader miss fields). */
export interface Status extends WireStatus {
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  code: number;
}

/** The reasons the face answers with (their HTTP and catalogue codes: src/wire/k8s.ts). */
export type Reason = StatusReason;

export class StatusError extends EtceteraError {
  readonly status: Status;

  constructor(reason: Reason, message: string, details?: StatusDetails, code?: number) {
    const spec = STATUS_REASONS[reason];
    super(spec.code, { detail: message });
    this.status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      ...(details ? { details } : {}),
      code: code ?? spec.http,
    };
  }

  get httpCode(): number {
    return this.status.code;
  }
}

/** Who an error is about: the resource (plural, group) and the object's name. */
export interface Subject {
  group: string;
  resource: string;
  name?: string;
}

function subjectDetails(s: Subject): StatusDetails {
  return { ...(s.name !== undefined ? { name: s.name } : {}), group: s.group, kind: s.resource };
}

export function notFound(s: Subject): StatusError {
  return new StatusError(
    'NotFound',
    `${qualifiedResource(s)} "${s.name ?? ''}" not found`,
    subjectDetails(s),
  );
}

export function alreadyExists(s: Subject): StatusError {
  return new StatusError(
    'AlreadyExists',
    `${qualifiedResource(s)} "${s.name ?? ''}" already exists`,
    subjectDetails(s),
  );
}

/** The optimistic-concurrency conflict of an update with a stale resourceVersion. */
export function conflict(s: Subject, why?: string): StatusError {
  const reason =
    why ??
    'the object has been modified; please apply your changes to the latest version and try again';
  return new StatusError(
    'Conflict',
    `Operation cannot be fulfilled on ${qualifiedResource(s)} "${s.name ?? ''}": ${reason}`,
    subjectDetails(s),
  );
}

export function badRequest(message: string): StatusError {
  return new StatusError('BadRequest', message);
}

export function expired(message: string): StatusError {
  return new StatusError('Expired', message);
}

export function methodNotAllowed(message?: string): StatusError {
  return new StatusError(
    'MethodNotAllowed',
    message ?? 'the server does not allow this method on the requested resource',
  );
}

/** The 404 for a path the face does not serve. */
export function pathNotFound(): StatusError {
  return new StatusError('NotFound', 'the server could not find the requested resource', {});
}

export const PATCH_TYPES_ACCEPTED =
  'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml';

export function unsupportedMediaType(accepted: string): StatusError {
  return new StatusError(
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted}`,
  );
}

/**
 * Any error as a StatusError: Status errors pass through; store and member errors map to
 * the reason Kubernetes gives for the same situation; anything else is a 500 whose text does
 * not leak internals beyond the error message.
 */
export function toStatusError(e: unknown): StatusError {
  if (e instanceof StatusError) return e;
  if (e instanceof KubeLibError) {
    const st = e.toStatus();
    return new StatusError(st.reason, st.message, st.details, st.code);
  }
  if (isEtceteraError(e)) {
    switch (e.code) {
      case 'ERR_COMPACTED':
        return expired(
          `The resourceVersion for the provided list is too old (compacted to ${e.details.compactRevision ?? '?'}).`,
        );
      case 'ERR_FUTURE_REV':
        return new StatusError('Timeout', 'Too large resource version', {
          causes: [
            {
              reason: 'ResourceVersionTooLarge',
              message: 'Too large resource version',
              field: '',
            },
          ],
          retryAfterSeconds: 1,
        });
      case 'ERR_REQUEST_TOO_LARGE':
        return new StatusError('RequestEntityTooLarge', 'Request entity too large');
      case 'ERR_NO_LEADER':
      case 'ERR_LEADER_CHANGED':
      case 'ERR_CLOSED':
      case 'ERR_RAFT_PROPOSAL_DROPPED':
        return new StatusError('ServiceUnavailable', e.message, { retryAfterSeconds: 1 });
      case 'ERR_TIMEOUT':
        return new StatusError('Timeout', e.message, { retryAfterSeconds: 1 });
      default:
        return new StatusError('InternalError', e.message);
    }
  }
  return new StatusError('InternalError', e instanceof Error ? e.message : String(e));
}
