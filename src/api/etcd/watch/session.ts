/**
 * What the two wire forms of etcd's watch stream share: a decoded WatchRequest, the context a
 * stream runs in (the watch cache, the one shared encoder, the session tuning, the request
 * bound), and applying a request to the stream's {@link EtcdWatchSession}.
 */
import type { IncomingMessage } from 'node:http';
import type { Cacher } from '../../../watchcache/cacher.js';
import type { EtcdFrame, EtcdJsonFormat } from '../../../watchcache/encoders/etcd-json.js';
import {
  type EtcdCreateRequest,
  type EtcdSessionOptions,
  EtcdWatchSession,
} from '../../../watchcache/etcd-session.js';
import type { FrameSink } from '../../../watchcache/types.js';

/** One decoded WatchRequest. */
export type EtcdWatchRequest =
  | { type: 'create'; create: EtcdCreateRequest }
  | { type: 'cancel'; watchId: number }
  | { type: 'progress' }
  | { type: 'none' };

/** What every stream of one server shares. */
export interface WatchStreamContext {
  readonly cacher: Cacher;
  /** One encoder per server, so every stream shares encoded bytes. */
  readonly format: EtcdJsonFormat;
  readonly session: Pick<EtcdSessionOptions, 'highWaterBytes' | 'maxWatches'>;
  /** Largest WatchRequest accepted (ERR_REQUEST_TOO_LARGE beyond). */
  readonly maxRequestBytes: number;
  /**
   * Resolves who a stream's request comes from (its Authorization header) into what that
   * caller may watch; rejects for a bad token. Absent: every watch is permitted.
   */
  readonly authorize?: (req: IncomingMessage) => Promise<EtcdSessionOptions['permits']>;
}

/** A new session over `sink`, in the server's context. */
export function openSession(
  ctx: WatchStreamContext,
  sink: FrameSink<EtcdFrame>,
  kind: 'etcd-http' | 'etcd-ws',
  permits?: EtcdSessionOptions['permits'],
): EtcdWatchSession<EtcdFrame> {
  return new EtcdWatchSession(ctx.cacher, ctx.format, sink, { ...ctx.session, kind, permits });
}

export function applyWatchRequest(session: EtcdWatchSession<EtcdFrame>, r: EtcdWatchRequest): void {
  switch (r.type) {
    case 'create':
      session.create(r.create);
      return;
    case 'cancel':
      session.cancel(r.watchId);
      return;
    case 'progress':
      session.progress();
      return;
    case 'none':
      return;
  }
}
