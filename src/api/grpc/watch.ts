/**
 * etcdserverpb.Watch: one bidirectional stream carrying many watches, run by the same
 * EtcdWatchSession as the JSON and websocket streams (ids, refusals, progress, ordering,
 * slow-watcher policy), with the protobuf format: one EtcdProtobufFormat per face, so a batch
 * is encoded once per selection for every gRPC stream and only watch_id is spliced per watch.
 *
 * Create and cancel requests are decoded by the JSON face's decoders (etcd/decode.ts, with
 * `from: 'protobuf'`), so both faces check them alike. A request that does not decode, or a
 * create with a negative start revision, ends the stream with the error's status; a WatchRequest with none of its three requests is ignored, as etcd
 * ignores it.
 */
import type grpc from '@grpc/grpc-js';
import type { Cacher } from '../../watchcache/cacher.js';
import type { EtcdFrame } from '../../watchcache/encoders/etcd-json.js';
import type { EtcdProtobufFormat } from '../../watchcache/encoders/etcd-protobuf.js';
import { EtcdWatchSession } from '../../watchcache/etcd-session.js';
import type { FrameSink } from '../../watchcache/types.js';
import { etcdProto } from '../../wire/proto/index.js';
import { decodeWatchCancel, decodeWatchCreate } from '../etcd/decode.js';
import { decodeRequest, type Msg } from './codec.js';
import { grpcStatusOf } from './status.js';
import type { MethodImpl } from './types.js';

export interface WatchServiceOptions {
  cacher: Cacher;
  format: EtcdProtobufFormat;
  /** A stream stops taking frames while this much is unsent. Default: the session's. */
  highWaterBytes?: number;
}

export function watchMethod(o: WatchServiceOptions): MethodImpl {
  const requestType = etcdProto().type('etcdserverpb.WatchRequest');
  return {
    kind: 'bidi',
    handle(call) {
      const session = new EtcdWatchSession(o.cacher, o.format, grpcSink(call), {
        highWaterBytes: o.highWaterBytes,
        kind: 'grpc',
      });
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        session.close();
      };
      call.on('data', (bytes: Buffer) => {
        if (ended) return;
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
          end();
          const s = grpcStatusOf(e);
          call.emit('error', { code: s.code, details: s.details });
        }
      });
      call.on('end', () => {
        end();
        call.end();
      });
      call.on('cancelled', end);
      call.on('error', end);
      call.on('close', end);
    },
  };
}

/**
 * Frames to the gRPC call, one message each. Bytes count as buffered from the write until
 * grpc-js has handed them to the HTTP/2 stream.
 */
function grpcSink(call: grpc.ServerDuplexStream<Buffer, Buffer>): FrameSink<EtcdFrame> {
  let pending = 0;
  let waiters: (() => void)[] = [];
  const drained = () => {
    if (pending > 0 || waiters.length === 0) return;
    const ws = waiters;
    waiters = [];
    for (const w of ws) w();
  };
  return {
    write(frames) {
      if (call.writableEnded || call.destroyed || call.cancelled) return;
      for (const f of frames) {
        const bytes = f.chunks.length === 1 ? f.chunks[0]! : Buffer.concat(f.chunks as Buffer[]);
        pending += bytes.length;
        call.write(bytes, () => {
          pending -= bytes.length;
          drained();
        });
      }
    },
    bufferedBytes: () => pending,
    onceDrain: (listener) => {
      waiters.push(listener);
      drained();
    },
  };
}
