/**
 * Where a watch session's frames go: an HTTP response or a websocket. Each sink writes all of
 * a flush's frames in one socket write and reports what its socket still holds, so the
 * session's slow-watcher policy sees the real backlog.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { EtcdFrame } from '../../../watchcache/encoders/etcd-json.js';
import type { FrameSink } from '../../../watchcache/types.js';
import { responseLine, wsTextMessages } from './frames.js';

/**
 * Frames to an HTTP response: each response exactly one HTTP chunk (its JSON and a newline),
 * as etcd's gateway writes them; a client that decodes chunk by chunk (Python's etcd3gw) needs
 * that. All of a flush's chunks are corked into one socket write.
 */
export function httpSink(res: ServerResponse): FrameSink<EtcdFrame> {
  return {
    write(frames) {
      if (res.writableEnded || res.destroyed) return;
      if (!res.headersSent) {
        res.writeHead(200, {
          'Content-Type': 'application/json',
          'Grpc-Metadata-Content-Type': 'application/grpc',
        });
      }
      res.cork();
      for (const f of frames) res.write(responseLine(f));
      res.uncork();
    },
    bufferedBytes: () => res.writableLength,
    onceDrain: (listener) => res.once('drain', listener),
  };
}

/**
 * Frames to a websocket: one text message each, all of a batch in one socket write
 * ({@link wsTextMessages}), without ws.send's per-message header buffer, concat and two socket
 * writes (the bench's profile of a 5,000-watcher fan-out had a third of the member's CPU
 * there). With an extension negotiated (permessage-deflate) ws frames the messages itself.
 */
export function wsSink(ws: WebSocket, socket: Socket): FrameSink<EtcdFrame> {
  return {
    write(frames) {
      if (ws.readyState !== ws.OPEN) return;
      if (ws.extensions !== '') {
        socket.cork();
        for (const f of frames)
          ws.send(f.chunks.length === 1 ? f.chunks[0]! : Buffer.concat(f.chunks as Buffer[]));
        socket.uncork();
        return;
      }
      socket.write(wsTextMessages(frames));
    },
    bufferedBytes: () => ws.bufferedAmount,
    onceDrain: (listener) => socket.once('drain', listener),
  };
}
