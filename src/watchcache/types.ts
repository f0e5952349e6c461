/**
 * The watch cache's vocabulary: watch requests, what a watcher receives, cancellations, and
 * the two plug-in points a wire format implements ({@link FrameEncoder}) and a connection
 * implements ({@link FrameSink}).
 */

import type { Bytes, Clock, Event, EventBatch, Revision } from '../store/types.js';

declare const byteSizeBrand: unique symbol;
/** A number of bytes (buffer bounds, frame sizes). Not to be mixed with counts of events. */
export type ByteSize = number & { readonly [byteSizeBrand]: 'ByteSize' };
export const ByteSize = (n: number): ByteSize => n as ByteSize;

declare const watcherIdBrand: unique symbol;
/** The cache-wide identity of one watcher (never reused while the cache lives). */
export type WatcherId = number & { readonly [watcherIdBrand]: 'WatcherId' };
export const WatcherId = (n: number): WatcherId => n as WatcherId;

/** etcd's watch filters: drop PUT or DELETE events before they reach the watcher. */
export const WatchFilter = { NOPUT: 'NOPUT', NODELETE: 'NODELETE' } as const;
export type WatchFilter = (typeof WatchFilter)[keyof typeof WatchFilter];

/**
 * What to watch and from where. The range follows {@link RangeRequest}: `rangeEnd` absent or
 * empty watches the single key `key`; `rangeEnd` = [0] watches every key >= `key`; otherwise the
 * half-open interval [key, rangeEnd). `prefix: true` is a shorthand for rangeEnd = the prefix
 * end of `key`. An empty `key` means [0], the smallest key, as in etcd.
 */
export interface WatchOptions {
  key: Bytes | string;
  rangeEnd?: Bytes | string;
  prefix?: boolean;
  /** First revision to deliver (inclusive). 0 or absent: from the next write on. */
  startRevision?: number;
  /** Include each event's previous key-value. */
  prevKv?: boolean;
  filters?: readonly WatchFilter[];
  /** Ask for periodic progress notifications while no events flow (etcd `progress_notify`). */
  progressNotify?: boolean;
  /** Allow one revision's events to be split over several frames when they are huge. */
  fragment?: boolean;
}

/** Why a watcher ended. Each reason carries what a client needs to continue. */
export const CancelReason = {
  /** The client (or the embedding code) cancelled it. */
  CLIENT: 'CLIENT',
  /** The start revision is below the store's compaction point. */
  COMPACTED: 'COMPACTED',
  /** The watcher's buffer stayed over its bound: it did not read fast enough. */
  SLOW: 'SLOW',
  /** The cache closed (server stopping). */
  CLOSED: 'CLOSED',
  /** Reading history failed for another reason. */
  FAILED: 'FAILED',
} as const;
export type CancelReason = (typeof CancelReason)[keyof typeof CancelReason];

/**
 * The end of a watcher. `resumeRevision` is the lowest revision whose events the watcher may
 * not have received: every event below it was delivered (in order), so a new watch from
 * `resumeRevision` continues without gap or duplicate.
 */
export type Cancellation =
  | { readonly reason: 'CLIENT' }
  | { readonly reason: 'COMPACTED'; readonly compactRevision: Revision }
  | { readonly reason: 'SLOW'; readonly resumeRevision: Revision; readonly message: string }
  | { readonly reason: 'CLOSED'; readonly resumeRevision: Revision; readonly message: string }
  | { readonly reason: 'FAILED'; readonly resumeRevision: Revision; readonly message: string };

/**
 * What an in-process watcher receives, in order. `events` holds every event of one revision
 * that the watcher's range and filters select (never empty). A `progress` at revision R comes
 * only after every selected event at or below R. `canceled` is always the last message.
 */
export type WatchResponse =
  | { readonly type: 'events'; readonly revision: Revision; readonly events: readonly Event[] }
  | { readonly type: 'progress'; readonly revision: Revision }
  | { readonly type: 'canceled'; readonly cancellation: Cancellation };

/**
 * One revision's batch as the window holds it. `encodings` caches the bytes each wire format
 * makes of it, so that an event is serialised once per format however many watchers get it.
 * The cache dies with the entry.
 */
export interface WindowEntry {
  readonly batch: EventBatch;
  /** Approximate in-memory size of the batch (keys, values, prevKvs, overhead). */
  readonly bytes: ByteSize;
  readonly encodings: Map<string, unknown>;
  /** When the cache received it (clock ms), for the dispatch latency metric. */
  readonly receivedAtMs: number;
}

/**
 * Which events of an entry one watcher gets. `indices` null: all of them (the shared case).
 * `key` names the selection so that watchers with the same selection share encoded bytes.
 */
export interface EventView {
  readonly indices: readonly number[] | null;
  readonly key: string;
}

/** The per-watcher facts a frame encoder may use. */
export interface WatcherInfo {
  readonly id: WatcherId;
  /** The id the client knows the watch by (etcd watch_id); 0 for in-process watchers. */
  readonly watchId: number;
  readonly prevKv: boolean;
  readonly fragment: boolean;
}

/**
 * A wire format. The cacher calls it inside the dispatch turn, so it must not block. Implement
 * it to add a format (the Kubernetes ?watch=1 stream is one): encode each event once per entry
 * and variant (cache in `entry.encodings` under a key that starts with your format's name), and
 * splice the per-watcher part (an id in an envelope) around the shared bytes.
 */
export interface FrameEncoder<F> {
  /**
   * Frames for the events `view` selects (the view is non-empty). One frame unless
   * fragmenting; none when the encoder filters per watcher (a Kubernetes label selector) and
   * keeps no event: the watcher still moves past the revision.
   */
  eventFrames(entry: WindowEntry, view: EventView, watcher: WatcherInfo): readonly F[];
  /** A progress notification (etcd) or bookmark (Kubernetes) at `revision`. */
  progressFrame(revision: Revision, watcher: WatcherInfo): F;
  /** The last frame of a watcher. `currentRevision` is the cache's revision at the time. */
  canceledFrame(cancellation: Cancellation, watcher: WatcherInfo, currentRevision: Revision): F;
  /** Bytes the frame occupies while queued (counted against the watcher's bound). */
  frameBytes(frame: F): number;
  /**
   * Optional: how the format joins the frames of consecutive revisions one watcher has not
   * received yet into one response (etcd sends a lagging watcher many revisions at once).
   * The watcher offers it whole revisions only (never a fragment), in order, as many as fit
   * in `maxBytes` of their {@link frameBytes} (a revision bigger than that goes alone).
   */
  readonly merge?: FrameMerge<F>;
}

export interface FrameMerge<F> {
  readonly maxBytes: number;
  /** One frame carrying every event of `frames` (two or more), in their order. */
  frames(frames: readonly F[]): F;
}

/**
 * Where a connection's frames go (a socket, an HTTP response, a websocket). The connection
 * calls `write` at most once per event-loop turn with every frame it can move, so the sink can
 * cork/uncork around them and the peer sees one write.
 */
export interface FrameSink<F> {
  write(frames: readonly F[]): void;
  /** Bytes accepted by `write` that the peer has not taken yet. */
  bufferedBytes(): number;
  /** Calls `listener` once, the next time the sink's buffer drains. */
  onceDrain(listener: () => void): void;
}

/** Time and timers, injected so tests can step them. */
export interface WatchClock extends Clock {
  /** Runs `fn` after `ms` milliseconds; returns a function that cancels it. */
  setTimer(fn: () => void, ms: number): () => void;
}

/** Runs `fn` in a later event-loop turn (setImmediate by default; tests may step turns). */
export type TurnScheduler = (fn: () => void) => void;

export type { Bytes, Event, EventBatch, Revision };
