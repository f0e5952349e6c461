/**
 * POST /v3/watch, what etcd 3.4's grpc-gateway serves: the body a sequence of JSON
 * WatchRequest objects (`{"create_request":{...}}`, usually just one; a client may keep the
 * body open and send more), the response newline-delimited `{"result":{...}}` objects, one
 * HTTP chunk each, for as long as the client stays. A request that does not decode ends the
 * stream with its error (an error answer before any response, else a last error line).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EtceteraError } from '../../../errors.js';
import type { EtcdSessionOptions } from '../../../watchcache/etcd-session.js';
import { sendError, streamErrorChunk } from '../../respond.js';
import { JsonSplitter } from './body.js';
import { decodeWatchRequest } from './decode.js';
import { applyWatchRequest, openSession, type WatchStreamContext } from './session.js';
import { httpSink } from './sink.js';

export function serveHttpWatch(
  ctx: WatchStreamContext,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  if (req.method !== 'POST') {
    sendError(res, new EtceteraError('ERR_METHOD_NOT_ALLOWED'));
    return;
  }
  if (ctx.authorize === undefined) return start(ctx, req, res, undefined);
  ctx.authorize(req).then(
    (permits) => start(ctx, req, res, permits),
    (e) => {
      sendError(res, e);
      req.destroy();
    },
  );
}

function start(
  ctx: WatchStreamContext,
  req: IncomingMessage,
  res: ServerResponse,
  permits: EtcdSessionOptions['permits'],
): void {
  const session = openSession(ctx, httpSink(res), 'etcd-http', permits);
  const fail = (e: unknown) => {
    session.close();
    if (!res.headersSent) sendError(res, e);
    else res.end(streamErrorChunk(e).text);
    req.destroy();
  };
  const splitter = new JsonSplitter(ctx.maxRequestBytes);
  req.on('data', (chunk: Buffer) => {
    try {
      for (const text of splitter.push(chunk)) applyWatchRequest(session, decodeWatchRequest(text));
    } catch (e) {
      fail(e);
    }
  });
  req.on('end', () => {
    if (!splitter.atBoundary())
      fail(new EtceteraError('ERR_MALFORMED_JSON', { detail: 'unexpected end of JSON input' }));
  });
  res.on('close', () => session.close());
  // A client that resets the connection must not crash the server.
  req.on('error', () => session.close());
  res.on('error', () => session.close());
}
