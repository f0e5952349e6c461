/**
 * Reading a request body: bounded in bytes, parsed as one JSON value.
 *
 * etcd's gateway reads any content type as JSON (curl -d sends a form type and works), and
 * reads an empty body or `null` as an empty message; so does this. The byte bound is on the
 * raw body, before base64 is decoded: a body past it is refused without being read to the
 * end. The precise limit (--max-request-bytes) is checked later on the decoded request, as
 * etcd checks it on the decoded protobuf message.
 */
import type { IncomingMessage } from 'node:http';
import { EtceteraError } from '../errors.js';

/**
 * The raw body bound for a request limit: base64 makes bytes 4/3 larger, and etcd's gRPC
 * server itself allows 512 KiB over the limit for the rest of the message.
 */
export function rawBodyLimit(maxRequestBytes: number): number {
  return Math.ceil((maxRequestBytes * 4) / 3) + 512 * 1024;
}

/** Resolves with the body, or rejects with ERR_REQUEST_TOO_LARGE once it passes `limit`. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > limit) return Promise.reject(new EtceteraError('ERR_REQUEST_TOO_LARGE'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err?: unknown) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (err) reject(err);
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        finish(new EtceteraError('ERR_REQUEST_TOO_LARGE'));
      } else chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onError = (e: unknown) => finish(e);
    // A client gone before the end of its body: settle, so nothing waits on it for ever.
    const onClose = () => finish(new Error('request closed before its body ended'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** Parses a body as JSON; empty and `null` read as `{}`. */
export function parseJson(buf: Buffer): unknown {
  const text = buf.toString('utf8');
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new EtceteraError('ERR_MALFORMED_JSON', {
      detail: e instanceof Error ? e.message : String(e),
    });
  }
  return value === null ? {} : value;
}
