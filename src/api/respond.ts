/**
 * Writing answers: JSON bodies, and etcd's error body `{"error","message","code"}` with the
 * HTTP status of src/api/http-status.ts. CORS headers are not written here: access.ts sets
 * them on the response, only for origins --cors allows, before a handler runs.
 */
import type { ServerResponse } from 'node:http';
import { EtceteraError, GrpcCode, isEtceteraError } from '../errors.js';
import type { ErrorBodyJson, StreamErrorJson } from '../wire/etcd-json.js';
import { httpStatusOf, httpStatusOfGrpc, reasonPhrase } from './http-status.js';

export type { ErrorBodyJson as ErrorBody };

/** A failure as etcd's JSON API reports it. Anything that is not an EtceteraError is Unknown/500. */
export function errorReply(err: unknown): { status: number; body: ErrorBodyJson } {
  if (isEtceteraError(err)) {
    return {
      status: httpStatusOf(err.code),
      body: { error: err.message, message: err.message, code: err.grpcCode },
    };
  }
  const message = 'etcetera: internal error';
  return {
    status: httpStatusOfGrpc(GrpcCode.Unknown),
    body: { error: message, message, code: GrpcCode.Unknown },
  };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  extraHeaders: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    ...extraHeaders,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, err: unknown, extraHeaders = {}): void {
  const { status, body } = errorReply(err);
  sendJson(res, status, body, extraHeaders);
}

/**
 * One message of a gateway stream (lease keepalive): `{"result": ...}` and a newline. A
 * failure inside a stream is `{"error": {grpc_code, http_code, message, http_status}}`, the
 * form grpc-gateway v1 uses for stream errors.
 */
export function streamChunk(result: unknown): string {
  return `${JSON.stringify({ result })}\n`;
}

export function streamErrorChunk(err: unknown): { status: number; text: string } {
  const { status, body } = errorReply(err);
  const error: StreamErrorJson = {
    grpc_code: body.code,
    http_code: status,
    message: body.message,
    http_status: reasonPhrase(status),
  };
  return { status, text: `${JSON.stringify({ error })}\n` };
}

export function routeNotFound(path: string): EtceteraError {
  return new EtceteraError('ERR_ROUTE_NOT_FOUND', { detail: path.slice(0, 200) });
}
