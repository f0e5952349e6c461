/**
 * etcd's watch stream over a websocket accepted on /v3/watch: each message one WatchRequest,
 * each response one text message (no newline). Many watches per socket, created, cancelled
 * and asked for progress at any time. A message that does not decode gets its error as a last
 * message and the socket is closed with 1007.
 */
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { EtceteraError } from '../../../errors.js';
import type { EtcdSessionOptions } from '../../../watchcache/etcd-session.js';
import { streamErrorChunk } from '../../respond.js';
import { decodeWatchRequest } from './decode.js';
import { applyWatchRequest, openSession, type WatchStreamContext } from './session.js';
import { wsSink } from './sink.js';

/** `req` is the upgrade request (its socket is corked). */
export function serveWsWatch(ctx: WatchStreamContext, ws: WebSocket, req: IncomingMessage): void {
  // Messages that arrive while the caller is being identified wait for it, in order.
  let session: ReturnType<typeof openSession> | undefined;
  let waiting: Array<[Buffer, boolean]> | undefined = [];
  const ready = (permits: EtcdSessionOptions['permits']) => {
    session = openSession(ctx, wsSink(ws, req.socket), 'etcd-ws', permits);
    const queued = waiting ?? [];
    waiting = undefined;
    for (const [data, isBinary] of queued) onMessage(data, isBinary);
  };
  const onMessage = (data: Buffer, isBinary: boolean) => {
    if (session === undefined) {
      waiting?.push([data, isBinary]);
      return;
    }
    try {
      const text = isBinary ? Buffer.from(data).toString('utf8') : data.toString('utf8');
      if (Buffer.byteLength(text) > ctx.maxRequestBytes)
        throw new EtceteraError('ERR_REQUEST_TOO_LARGE');
      applyWatchRequest(session, decodeWatchRequest(text));
    } catch (e) {
      session.close();
      ws.send(streamErrorChunk(e).text.trimEnd());
      ws.close(1007, 'invalid watch request');
    }
  };
  ws.on('message', onMessage);
  if (ctx.authorize === undefined) ready(undefined);
  else
    ctx.authorize(req).then(ready, (e) => {
      waiting = undefined;
      ws.send(streamErrorChunk(e).text.trimEnd());
      ws.close(1008, 'invalid auth token');
    });
  ws.on('close', () => session?.close());
  ws.on('error', () => session?.close());
}
