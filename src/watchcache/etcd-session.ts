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
 * The answers to the stream's requests leave in request order (connection.ts): create c/1,
 * create c/2, cancel 0 is answered created 0, created 1, canceled 0, as etcd does. A progress
 * request costs O(1) whatever the number of watches; etcd 3.4 answers each one, and so do we.
 * A stream holds at most `maxWatches` watches (etcd has no bound): one more create is refused
 * with watch_id -1 and ERR_WATCH_LIMIT's text, and the stream goes on.
 *
 * The session is generic over the wire format (`F`, the frame type): etcd's JSON
 * (encoders/etcd-json.ts) for the HTTP and websocket streams, protobuf
 * (encoders/etcd-protobuf.ts) for the gRPC Watch call.
 */

import { EtceteraError, isEtceteraError } from '../errors.js';
import { Revision } from '../store/types.js';
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

export interface EtcdSessionOptions extends Omit<ConnectionOptions, 'onWatcherDone'> {
  /** Most watches open at once on the stream. Default {@link DEFAULT_MAX_WATCHES_PER_STREAM}. */
  maxWatches?: number;
  /**
   * Whether the stream's caller may watch this range (etcd's auth: READ on all of it). A
   * create it refuses is answered created and canceled with watch_id -1 and etcd's reason.
   * Default: every create is permitted.
   */
  permits?: (req: EtcdCreateRequest) => boolean;
}

/** etcd's cancel reason for a watch on a range the caller may not read. */
export const PERMISSION_DENIED_REASON =
  'rpc error: code = PermissionDenied desc = etcdserver: permission denied';

/** Watches one stream may hold at once, unless configured (--max-watches-per-stream). */
export const DEFAULT_MAX_WATCHES_PER_STREAM = 10_000;

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
  private readonly maxWatches: number;
  private readonly permits: ((req: EtcdCreateRequest) => boolean) | undefined;

  constructor(
    private readonly cacher: Cacher,
    private readonly format: EtcdWatchFormat<F>,
    sink: FrameSink<F>,
    options: EtcdSessionOptions = {},
  ) {
    const { maxWatches, permits, ...connectionOptions } = options;
    this.maxWatches = maxWatches ?? DEFAULT_MAX_WATCHES_PER_STREAM;
    this.permits = permits;
    this.connection = new Connection(cacher, sink, {
      ...connectionOptions,
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
    if (this.permits !== undefined && !this.permits(req)) {
      const revision = this.cacher.revision as Revision;
      this.connection.enqueueAnswer(
        this.format.createdFrame(-1, revision, PERMISSION_DENIED_REASON),
      );
      return;
    }
    if (this.ids.size >= this.maxWatches) {
      this.refuse(new EtceteraError('ERR_WATCH_LIMIT', { detail: `at most ${this.maxWatches}` }));
      return;
    }
    let id = req.watchId;
    const auto = id === 0;
    if (auto) {
      while (this.ids.has(this.nextAutoId)) this.nextAutoId++;
      id = this.nextAutoId++;
    } else if (this.ids.has(id)) {
      this.refuse(new EtceteraError('ERR_WATCH_DUPLICATE_ID'));
      return;
    }
    let w: Watcher<F>;
    const revision = this.cacher.revision;
    try {
      w = this.cacher.addWatcher(req, this.format, { watchId: id });
    } catch (e) {
      if (isEtceteraError(e, 'ERR_WATCH_RANGE_EMPTY')) {
        // etcd checks the range before it chooses an id: a refused create uses none up.
        if (auto) this.nextAutoId = id;
        this.refuse(e);
        return;
      }
      throw e;
    }
    this.ids.set(id, w);
    this.connection.attach(w, this.format.createdFrame(id, revision));
  }

  /** cancel_request: etcd answers with canceled; an unknown id gets no answer. */
  cancel(watchId: number): void {
    const w = this.ids.get(watchId);
    if (w === undefined) return;
    this.ids.delete(watchId);
    // What the client will have had of it: the cancel drops events not yet written.
    const first = w.firstQueuedRevision();
    const through = first === undefined ? this.cacher.coveredRevision(w) : Revision(first - 1);
    this.cacher.cancel(w);
    this.connection.detachInOrder(w, through);
  }

  /**
   * progress_request: one response with watch_id -1 at a revision R such that every event at or
   * below R for every watch created before it on this stream has been written before it. O(1):
   * the connection picks R when it writes the response (see connection.ts).
   */
  progress(): void {
    this.connection.enqueueProgress((r) => this.format.progressFrame(r, STREAM));
  }

  /** The stream ended (peer gone): cancel every watch, write nothing more. */
  close(): void {
    this.connection.close();
    this.ids.clear();
  }

  /** A refused create: created and canceled with watch_id -1 and the reason (etcd's text). */
  private refuse(e: EtceteraError): void {
    const revision = this.cacher.revision as Revision;
    const reason = e.code === 'ERR_WATCH_LIMIT' ? e.message : e.etcdMessage;
    this.connection.enqueueAnswer(this.format.createdFrame(-1, revision, reason));
  }
}
