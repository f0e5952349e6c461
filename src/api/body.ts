/**
 * Reading a request body: bounded in bytes, parsed as one JSON value.
 *
 * etcd's gateway reads any content type as JSON (curl -d sends a form type and works), and
 * reads an empty body or `null` as an empty message; so does this. The byte bound is on the
 * raw body, before base64 is decoded: a body past it is refused without being read to the
 * end. The precise limit (--max-request-bytes) is checked later on the decoded request, as
 * etcd checks it on the decoded protobuf message.
 *
 * Two more bounds hold for hostile clients (README, "Limits"): a body must arrive within a
 * deadline (--read-body-timeout; one byte a second does not hold a request open), and JSON
 * may nest at most {@link MAX_JSON_DEPTH} levels, measured on the text before it is parsed
 * (JSON.parse of a megabyte of `[` blocks the event loop for seconds). The measure counts
 * brackets outside strings ({@link jsonNestsDeeperThan}), which is exact for every text
 * JSON.parse accepts (what it refuses fails anyway); it runs on every request, so it is one
 * pass over the characters, not the Kubernetes face's YAML scan (which a put's profile
 * showed at 2% of the member's CPU). The bound here is Go's encoding/json one, which etcd's
 * gateway applies, since nested txns legitimately nest deeper than the Kubernetes face's
 * 200 levels (four JSON levels per txn).
 */
import type { IncomingMessage } from 'node:http';
import { EtceteraError } from '../errors.js';

/** The deepest JSON body the etcd face reads: Go's encoding/json bound, as etcd's gateway. */
export const MAX_JSON_DEPTH = 10_000;

/** --read-body-timeout's default: how long a request body may take to arrive. */
export const DEFAULT_READ_BODY_TIMEOUT_MS = 60_000;

/**
 * Calls `onLate` unless cancelled within `ms` (a body's deadline); returns the cancel.
 * After `onLate` the caller answers with `Connection: close`, so the slow body is not drained.
 */
export function bodyDeadline(ms: number, onLate: () => void): () => void {
  const timer = setTimeout(onLate, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

/**
 * The raw body bound for a request limit: base64 makes bytes 4/3 larger, and etcd's gRPC
 * server itself allows 512 KiB over the limit for the rest of the message.
 */
export function rawBodyLimit(maxRequestBytes: number): number {
  return Math.ceil((maxRequestBytes * 4) / 3) + 512 * 1024;
}

/**
 * Resolves with the body, or rejects with ERR_REQUEST_TOO_LARGE once it passes `limit`, or
 * with ERR_BODY_TIMEOUT when it has not ended within `timeoutMs`.
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  timeoutMs: number = DEFAULT_READ_BODY_TIMEOUT_MS,
): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > limit) return Promise.reject(new EtceteraError('ERR_REQUEST_TOO_LARGE'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const cancel = bodyDeadline(timeoutMs, () => {
      req.pause();
      finish(
        new EtceteraError('ERR_BODY_TIMEOUT', {
          detail: `the body did not arrive within ${timeoutMs} ms`,
        }),
      );
    });
    const finish = (err?: unknown) => {
      if (done) return;
      done = true;
      cancel();
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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * True when JSON `text` nests arrays and objects deeper than `limit` levels: brackets and
 * braces counted outside strings (a backslash escapes the next character inside one).
 */
export function jsonNestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

/** Throws ERR_NESTING_TOO_DEEP when JSON `text` may nest deeper than {@link MAX_JSON_DEPTH}. */
export function checkJsonDepth(text: string): void {
  if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH))
    throw new EtceteraError('ERR_NESTING_TOO_DEEP', {
      detail: `the body nests deeper than ${MAX_JSON_DEPTH} levels`,
    });
}

/** Parses a body as JSON; empty and `null` read as `{}`. */
export function parseJson(buf: Buffer): unknown {
  const text = buf.toString('utf8');
  if (text.trim() === '') return {};
  checkJsonDepth(text);
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
