/**
 * etcdserverpb.Watch: one bidirectional stream carrying many watches, run by the same
 * EtcdWatchSession as the JSON and websocket streams (ids, refusals, progress, ordering,
 * slow-watcher policy), with the protobuf format: one EtcdProtobufFormat per face, so a batch
 * is encoded once per selection for every gRPC stream and only watch_id is spliced per watch.
 *
 * The call is served on its node:http2 stream directly (raw-call.ts), not through grpc-js:
 * each flush of the session's connection leaves in one stream write, every response with its
 * own gRPC prefix. Backpressure is the stream's: while more than the high-water mark is
 * unsent (the client's HTTP/2 window is shut), the connection stops taking frames and the
 * watch cache's per-watcher bounds and slow-watcher policy apply.
 *
 * Create and cancel requests are decoded by the JSON face's decoders (etcd/decode.ts, with
 * `from: 'protobuf'`), so both faces check them alike. A request that does not decode, or a
 * create with a negative start revision, ends the stream with the error's status; a
 * WatchRequest with none of its three requests is ignored, as etcd ignores it. A client that
 * half-closes the stream is served on, as etcd serves it: every answer to what it sent, and
 * the events of its open watches, until it cancels the call.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Cacher } from '../../watchcache/cacher.js';
import type { EtcdFrame } from '../../watchcache/encoders/etcd-json.js';
import type { EtcdProtobufFormat } from '../../watchcache/encoders/etcd-protobuf.js';
import { EtcdWatchSession } from '../../watchcache/etcd-session.js';
import type { FrameSink } from '../../watchcache/types.js';
import { etcdProto } from '../../wire/proto/index.js';
import { decodeWatchCancel, decodeWatchCreate } from '../etcd/decode.js';
import type { watchPermits } from '../etcd/route.js';
import { decodeRequest, type Msg } from './codec.js';
import { RawGrpcCall } from './raw-call.js';
import { grpcStatusOf } from './status.js';

export const WATCH_PATH = '/etcdserverpb.Watch/Watch';

export interface WatchServiceOptions {
  cacher: Cacher;
  format: EtcdProtobufFormat;
  /** Largest WatchRequest taken (--max-request-bytes plus gRPC's allowance). */
  maxReceiveBytes: number;
  /** A stream stops taking frames while this much is unsent. Default: the session's. */
  highWaterBytes?: number;
  /** Watches one stream may hold; one more create is refused in-stream. Default the session's. */
  maxWatches?: number;
  /** What the caller may watch (READ on the whole range, with auth on); undefined: anything. */
  permits?: ReturnType<typeof watchPermits>;
}

/** Serves one Watch call on its HTTP/2 stream. */
export function serveWatch(
  o: WatchServiceOptions,
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
): void {
  const requestType = etcdProto().type('etcdserverpb.WatchRequest');
  const call = new RawGrpcCall(stream, headers, { maxReceiveBytes: o.maxReceiveBytes });
  const session = new EtcdWatchSession(o.cacher, o.format, rawSink(call), {
    highWaterBytes: o.highWaterBytes,
    maxWatches: o.maxWatches,
    permits: o.permits,
    kind: 'grpc',
  });
  call.start({
    message(bytes) {
      try {
        const r = decodeRequest(requestType, bytes);
        const create = r.create_request as Msg | undefined;
        const cancel = r.cancel_request as Msg | undefined;
        if (create !== undefined)
          session.create(decodeWatchCreate(create, 'create_request', 'protobuf'));
        else if (cancel !== undefined)
          session.cancel(decodeWatchCancel(cancel, 'cancel_request', 'protobuf'));
        else if (r.progress_request !== undefined) session.progress();
      } catch (e) {
        call.finish(grpcStatusOf(e));
      }
    },
    // etcd serves a half-closed stream on (answers, events of its open watches) until the
    // client cancels the call or goes away; 'close' ends the session then.
    end: () => {},
    close: () => session.close(),
  });
}

/** The session's frames to the call: everything of one flush in one stream write. */
function rawSink(call: RawGrpcCall): FrameSink<EtcdFrame> {
  return {
    write: (frames) => call.writeMessages(frames),
    bufferedBytes: () => call.bufferedBytes(),
    onceDrain: (listener) => call.onceDrain(listener),
  };
}
