/**
 * Errors the client raises. A server's refusal becomes a ClientError carrying what etcd's
 * JSON API sends (gRPC code, message, HTTP status) and, when the message is one of the
 * catalogue's texts (src/errors.ts), the stable ERR_* code, so callers can branch on
 * `err.code === 'ERR_COMPACTED'` against etcetera and etcd alike.
 */
import { ERRORS, type ErrorCode, GrpcCode } from '../errors.js';

const CODE_BY_MESSAGE: ReadonlyMap<string, ErrorCode> = new Map(
  (Object.entries(ERRORS) as [ErrorCode, { message: string }][]).map(([code, spec]) => [
    spec.message,
    code,
  ]),
);

export class ClientError extends Error {
  override readonly name = 'ClientError';
  /** The catalogue code, when the server's message is one of its texts (detail aside). */
  readonly code: ErrorCode | undefined;

  constructor(
    message: string,
    /** The gRPC status code the server reported (Unavailable for transport failures). */
    readonly grpcCode: number,
    /** The HTTP status, 0 when no answer came. */
    readonly httpStatus: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = codeOf(message);
  }
}

function codeOf(message: string): ErrorCode | undefined {
  const exact = CODE_BY_MESSAGE.get(message);
  if (exact) return exact;
  // etcetera appends detail after the catalogue text: "<text>: <detail>".
  for (let i = message.indexOf(': '); i > 0; i = message.indexOf(': ', i + 2)) {
    const code = CODE_BY_MESSAGE.get(message.slice(0, i));
    if (code) return code;
  }
  return undefined;
}

export function isClientError(e: unknown, code?: ErrorCode): e is ClientError {
  return e instanceof ClientError && (code === undefined || e.code === code);
}

/** A request that got no answer (connection refused or reset, timeout). */
export function transportError(message: string, cause: unknown): ClientError {
  return new ClientError(message, GrpcCode.Unavailable, 0, { cause });
}
