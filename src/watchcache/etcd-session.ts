/**
 * One etcd watch stream (a gRPC Watch call; here an HTTP /v3/watch request or a websocket):
 * many watches, created, cancelled and asked for progress at any time, on one connection.
 *
 * It keeps etcd's rules for watch ids: 0 asks the server to choose (the lowest unused id at
 * or above a counter that only grows); a taken id refuses the create with watch_id -1 and
 * "mvcc: duplicate watch ID provided on the WatchStream"; an empty range refuses it with
 * "mvcc: watcher range is empty". A create is answered with `created` before any event; a
 * watch from a compacted revision gets `created` and then a cancel with compact_revision.
 *
 * The session is generic over the wire format (`F`, the frame type): etcd's JSON
 * (encoders/etcd-json.ts) for the HTTP and websocket streams, protobuf
 * (encoders/etcd-protobuf.ts) for the gRPC Watch call.
 */

import { EtceteraError, isEtceteraError } from '../errors.js';
import type { Revision } from '../store/types.js';
import type { Cacher } from './cacher.js';
import { Connection, type ConnectionOptions } from './connection.js';
import type { EtcdFrame } from './encoders/etcd-json.js';
import {
  type FrameEncoder,
  type FrameSink,
  WatcherId,
  type WatcherInfo,
  type WatchOptions,
} from './types.js';
import type { Watcher } from './watcher.js';

/** A decoded create_request. `watchId` 0 = let the server choose. */
export interface EtcdCreateRequest extends WatchOptions {
  watchId: number;
}

/** What a wire format of etcd's watch stream adds to a frame encoder: the create answer. */
export interface EtcdWatchFormat<F> extends FrameEncoder<F> {
  /** The answer to a create request; with `cancelReason`, a refused create (watch_id -1). */
  createdFrame(watchId: number, revision: Revision, cancelReason?: string): F;
}

/** The stream itself, as the addressee of a progress_request answer (watch_id -1). */
const STREAM: WatcherInfo = { id: WatcherId(0), watchId: -1, prevKv: false, fragment: false };

export class EtcdWatchSession<F = EtcdFrame> {
  private readonly ids = new Map<number, Watcher<F>>();
  private nextAutoId = 0;
  private readonly connection: Connection<F>;

  constructor(
    private readonly cacher: Cacher,
    private readonly format: EtcdWatchFormat<F>,
    sink: FrameSink<F>,
    options: Omit<ConnectionOptions, 'onWatcherDone'> = {},
  ) {
    this.connection = new Connection(cacher, sink, {
      ...options,
      onWatcherDone: (w) => {
        if (this.ids.get(w.watchId) === w) this.ids.delete(w.watchId);
      },
    });
  }

  /** Watches open on this stream. */
  get size(): number {
    return this.ids.size;
  }

  create(req: EtcdCreateRequest): void {
    let id = req.watchId;
    if (id === 0) {
      while (this.ids.has(this.nextAutoId)) this.nextAutoId++;
      id = this.nextAutoId++;
    } else if (this.ids.has(id)) {
      this.refuse(new EtceteraError('ERR_WATCH_DUPLICATE_ID'));
      return;
    }
    let w: Watcher<F>;
    try {
      w = this.cacher.addWatcher(req, this.format, {
        watchId: id,
        createdFrame: (revision) => this.format.createdFrame(id, revision),
      });
    } catch (e) {
      if (isEtceteraError(e, 'ERR_WATCH_RANGE_EMPTY')) {
        this.refuse(e);
        return;
      }
      throw e;
    }
    this.ids.set(id, w);
    this.connection.attach(w);
  }

  /** cancel_request: etcd answers with canceled; an unknown id gets no answer. */
  cancel(watchId: number): void {
    const w = this.ids.get(watchId);
    if (w === undefined) return;
    this.ids.delete(watchId);
    this.cacher.cancel(w);
  }

  /**
   * progress_request: one response with watch_id -1 at a revision R such that every event at or
   * below R for every watch on this stream has been written before it.
   */
  progress(): void {
    this.connection.enqueueControl(() => {
      let r = this.cacher.revision as number;
      for (const w of this.ids.values())
        if (!w.done) r = Math.min(r, this.cacher.coveredRevision(w));
      return this.format.progressFrame(r as Revision, STREAM);
    });
  }

  /** The stream ended (peer gone): cancel every watch, write nothing more. */
  close(): void {
    this.connection.close();
    this.ids.clear();
  }

  /** A frame on the stream that no watch owns (a refusal, an error). */
  sendControl(build: () => F | null): void {
    this.connection.enqueueControl(build);
  }

  private refuse(e: EtceteraError): void {
    const revision = this.cacher.revision as Revision;
    this.connection.enqueueControl(() => this.format.createdFrame(-1, revision, e.etcdMessage));
  }
}
