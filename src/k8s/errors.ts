/**
 * The one error type of the pure Kubernetes libraries (selectors, patches, apply, schemas,
 * YAML bodies). Each carries what the server needs to answer with a Status: the HTTP code,
 * the Kubernetes reason, the exact Kubernetes message and, for 422 and apply conflicts, the
 * causes. The libraries never write HTTP; the server turns `toStatus()` into the body.
 *
 * It is an EtceteraError with the ERR_KUBE_* code of its reason, so the catalogue in
 * src/errors.ts stays the only list of codes. `message` is the catalogue text plus the
 * Kubernetes message; `statusMessage` is the Kubernetes message alone (what goes on the wire).
 */
import { EtceteraError } from '../errors.js';
import { STATUS_REASONS } from '../wire/k8s.js';
import {
  aggregateMessages,
  type FieldError,
  fieldErrorString,
  goQuote,
  type StatusCause,
  toCause,
} from './field-errors.js';

/** The reasons the libraries raise (their HTTP and catalogue codes: src/wire/k8s.ts). */
export type LibReason =
  | 'BadRequest'
  | 'Conflict'
  | 'RequestEntityTooLarge'
  | 'UnsupportedMediaType'
  | 'Invalid';

export interface LibStatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
}

/** A Kubernetes Status body (kind Status, apiVersion v1). */
export interface LibStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: LibReason;
  details?: LibStatusDetails;
  code: number;
}

export class KubeLibError extends EtceteraError {
  readonly reason: LibReason;
  readonly httpCode: number;
  /** The Kubernetes message, byte for byte what the Status carries. */
  readonly statusMessage: string;
  readonly statusDetails: LibStatusDetails | undefined;

  /**
   * @param internalDetail a more precise text for logs when the Kubernetes message is generic
   *   (Kubernetes answers a failed JSON patch `test` with a fixed sentence).
   */
  constructor(
    reason: LibReason,
    statusMessage: string,
    statusDetails?: LibStatusDetails,
    internalDetail?: string,
  ) {
    const spec = STATUS_REASONS[reason];
    const detail =
      internalDetail && internalDetail !== statusMessage
        ? `${statusMessage} (${internalDetail})`
        : statusMessage;
    super(spec.code, { detail });
    this.reason = reason;
    this.httpCode = spec.http;
    this.statusMessage = statusMessage;
    this.statusDetails = statusDetails;
  }

  /** The causes of a 422 or an apply conflict (empty otherwise). */
  get causes(): StatusCause[] {
    return this.statusDetails?.causes ?? [];
  }

  /** The Status body the server answers with. */
  toStatus(): LibStatus {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.statusMessage,
      reason: this.reason,
      ...(this.statusDetails ? { details: this.statusDetails } : {}),
      code: this.httpCode,
    };
  }
}

export function isKubeLibError(e: unknown, reason?: LibReason): e is KubeLibError {
  return e instanceof KubeLibError && (reason === undefined || e.reason === reason);
}

export function badRequest(message: string): KubeLibError {
  return new KubeLibError('BadRequest', message);
}

/** Kubernetes' text for a 422 raised without field errors (a patch that cannot apply). */
export const GENERIC_INVALID_MESSAGE =
  'the server rejected our request due to an error in our request';

/**
 * A 422 as kube-apiserver answers a JSON patch or strategic merge patch that cannot be
 * applied: the Status keeps Kubernetes' generic sentence, the error keeps the real reason.
 */
export function unprocessable(detail: string): KubeLibError {
  return new KubeLibError('Invalid', GENERIC_INVALID_MESSAGE, undefined, detail);
}

/** How Kubernetes names a group kind in messages: `Pod`, `Deployment.apps`. */
export function qualifiedKind(group: string, kind: string): string {
  return group === '' ? kind : `${kind}.${group}`;
}

/**
 * 422 Invalid for an object: `Widget.example.com "w1" is invalid: spec.size: Invalid value:
 * ...` with one cause per field error (kubectl prints the causes).
 */
export function invalidObject(
  group: string,
  kind: string,
  name: string,
  errors: readonly FieldError[],
): KubeLibError {
  const head = `${qualifiedKind(group, kind)} ${goQuote(name)} is invalid`;
  const message =
    errors.length === 0 ? head : `${head}: ${aggregateMessages(errors.map(fieldErrorString))}`;
  return new KubeLibError('Invalid', message, {
    name,
    group,
    kind,
    causes: errors.map(toCause),
  });
}

export function tooLarge(message: string): KubeLibError {
  return new KubeLibError('RequestEntityTooLarge', message);
}
