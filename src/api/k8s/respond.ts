/**
 * Writing answers of the Kubernetes face: JSON bodies, Status errors with the matching HTTP
 * code, and `Warning: 299 - "<text>"` headers (kubectl prints them on stderr).
 */
import type { ServerResponse } from 'node:http';
import { type StatusError, toStatusError } from '../../k8s/status.js';

export const JSON_TYPE = 'application/json';

function warningHeader(text: string): string {
  // The text is a quoted string: escape backslashes and quotes, drop line breaks.
  return `299 - "${text.replace(/[\r\n]/g, ' ').replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

export function sendText(
  res: ServerResponse,
  code: number,
  text: string,
  contentType: string = JSON_TYPE,
  warnings: readonly string[] = [],
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const headers: Record<string, string | string[]> = {
    'Content-Type': contentType,
    'Content-Length': String(Buffer.byteLength(text)),
    'Cache-Control': 'no-cache, private',
  };
  if (warnings.length > 0) headers.Warning = warnings.map(warningHeader);
  res.writeHead(code, headers);
  res.end(text);
}

export function sendJson(
  res: ServerResponse,
  code: number,
  body: unknown,
  warnings: readonly string[] = [],
): void {
  sendText(res, code, JSON.stringify(body), JSON_TYPE, warnings);
}

/** Any error as a Status answer; unexpected errors become a 500 Status, never a crash. */
export function sendError(res: ServerResponse, err: unknown): StatusError {
  const se = toStatusError(err);
  sendJson(res, se.httpCode, se.status);
  return se;
}

/** The success Status some deletes answer with. */
export function successStatus(details: Record<string, string>): unknown {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details };
}
