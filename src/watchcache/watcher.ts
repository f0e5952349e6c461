/**
 * One watcher: its range, options, position in the revision stream, and its bounded queue of
 * encoded frames waiting for the consumer (a connection or an in-process reader).
 *
 * Position invariant: every revision below `nextRevision` has been examined for this watcher
 * and its selected events are queued (or were taken). The cacher enqueues a batch only when
 * `batch.revision >= nextRevision` and then moves `nextRevision` past it, which is what makes
 * delivery exactly-once when replay and live dispatch overlap.
 *
 * Queue invariant: frames are in revision order; `queuedBytes` is the sum of their sizes. The
 * cacher enforces the bound (see cacher.ts `maybeCancelSlowUnsafe`); the queue only counts.
 */

import { Revision } from '../store/types.js';
import { bytesToLatin1, prefixEnd } from '../wire/bytes.js';
import { type FieldIndexed, type FieldSelection, selectsEvent } from './field-index.js';
import type { WindowInterval } from './interval.js';
import { type KeyRangeKind, normalizeRange, rangeContains, toBytes } from './keys.js';
import type {
  Cancellation,
  EventView,
  FrameEncoder,
  WatcherId,
  WatcherInfo,
  WatchOptions,
  WindowEntry,
} from './types.js';
import type { Indexed } from './watcher-index.js';

export const WatcherState = {
  /** Replaying history (store or window); not in the index yet. */
  CATCHING_UP: 'CATCHING_UP',
  /** In the index; the dispatcher enqueues live batches. */
  SYNCED: 'SYNCED',
  /** Cancelled; the queue holds at most the final frames. */
  DONE: 'DONE',
} as const;
export type WatcherState = (typeof WatcherState)[keyof typeof WatcherState];

interface Queued<F> {
  readonly frame: F;
  readonly bytes: number;
  /** The batch revision for event frames, 0 for others. */
  readonly revision: number;
  readonly events: number;
  /** Every event of its revision for this watcher (not a fragment): it may be merged. */
  readonly whole: boolean;
}

export interface WatcherSpec<F> {
  id: WatcherId;
  watchId: number;
  range: KeyRangeKind;
  prevKv: boolean;
  fragment: boolean;
  noPut: boolean;
  noDelete: boolean;
  progressNotify: boolean;
  encoder: FrameEncoder<F>;
  /** Found by a field's value (field-index.ts) rather than by key range alone. */
  field?: FieldSelection | null;
}

/**
 * A watcher's spec from the caller's options. Throws ERR_WATCH_RANGE_EMPTY for an empty range.
 * `prefix: true` watches every key starting with `key` (an empty key: every key).
 */
export function watcherSpec<F>(
  opts: WatchOptions,
  id: WatcherId,
  watchId: number,
  encoder: FrameEncoder<F>,
): WatcherSpec<F> {
  const key = toBytes(opts.key);
  const rangeEnd = opts.prefix
    ? prefixEnd(key)
    : opts.rangeEnd === undefined
      ? undefined
      : toBytes(opts.rangeEnd);
  const filters = opts.filters ?? [];
  return {
    id,
    watchId,
    range: normalizeRange(key, rangeEnd),
    prevKv: opts.prevKv === true,
    fragment: opts.fragment === true,
    noPut: filters.includes('NOPUT'),
    noDelete: filters.includes('NODELETE'),
    progressNotify: opts.progressNotify === true,
    encoder,
  };
}

/**
 * Watchers of one consumer (a connection) counted while they catch up, so the consumer knows
 * in O(1) whether all of them follow the live stream; told when the count drops to 0.
 */
export interface CatchUpGroup {
  catchingUp: number;
  onAllSynced(): void;
}

/** What `take` hands to the consumer, with counts for metrics. */
export interface Taken<F> {
  frames: F[];
  bytes: number;
  events: number;
}

export class Watcher<F> implements Indexed, FieldIndexed, WatcherInfo {
  readonly id: WatcherId;
  readonly watchId: number;
  readonly range: KeyRangeKind;
  readonly prevKv: boolean;
  readonly fragment: boolean;
  readonly noPut: boolean;
  readonly noDelete: boolean;
  readonly progressNotify: boolean;
  readonly encoder: FrameEncoder<F>;
  readonly field: FieldSelection | null;

  private _state: WatcherState = WatcherState.CATCHING_UP;
  private group: CatchUpGroup | null = null;
  nextRevision: Revision = Revision(1);
  cancellation: Cancellation | null = null;
  /** Events were queued since the last progress tick (etcd skips progress then). */
  sentSinceTick = false;
  /** Slow policy: when the queue went over the soft bound, and the grace it got. */
  overSinceMs: number | null = null;
  graceMs = 0;
  /** Catch-up state (cacher.ts / catch-up.ts). */
  interval: WindowInterval | null = null;
  historyRunning = false;

  /** Called after frames are queued. The consumer schedules a flush. */
  onReadable: (() => void) | null = null;
  /** Called when `take` brings the queue under the low-water mark (half the soft bound). */
  onDrained: (() => void) | null = null;
  lowWaterBytes = 0;

  private queue: Queued<F>[] = [];
  private head = 0;
  private _queuedBytes = 0;

  constructor(spec: WatcherSpec<F>) {
    this.id = spec.id;
    this.watchId = spec.watchId;
    this.range = spec.range;
    this.prevKv = spec.prevKv;
    this.fragment = spec.fragment;
    this.noPut = spec.noPut;
    this.noDelete = spec.noDelete;
    this.progressNotify = spec.progressNotify;
    this.encoder = spec.encoder;
    this.field = spec.field ?? null;
  }

  get state(): WatcherState {
    return this._state;
  }
  set state(s: WatcherState) {
    const g = this.group;
    if (g !== null && s !== this._state) {
      if (this._state === WatcherState.CATCHING_UP) g.catchingUp--;
      if (s === WatcherState.CATCHING_UP) g.catchingUp++;
      else if (g.catchingUp === 0) g.onAllSynced();
    }
    this._state = s;
  }

  /** Counts this watcher in `g` while it catches up (one group at a time). */
  joinGroup(g: CatchUpGroup): void {
    if (this.group === g) return;
    this.leaveGroup();
    this.group = g;
    if (this._state === WatcherState.CATCHING_UP) g.catchingUp++;
  }

  leaveGroup(): void {
    const g = this.group;
    if (g === null) return;
    this.group = null;
    if (this._state === WatcherState.CATCHING_UP && --g.catchingUp === 0) g.onAllSynced();
  }

  get queuedBytes(): number {
    return this._queuedBytes;
  }
  get queuedFrames(): number {
    return this.queue.length - this.head;
  }
  get done(): boolean {
    return this.state === WatcherState.DONE;
  }

  /**
   * The events of `entry` this watcher gets: those in its range and field selection (unless
   * the caller already knows, `inRange`: the index found them) that its filters keep. `candidates` null means all events. Returns null
   * when nothing is left.
   */
  viewOf(
    entry: WindowEntry,
    candidates: readonly number[] | null,
    inRange: boolean,
  ): EventView | null {
    const events = entry.batch.events;
    const n = candidates === null ? events.length : candidates.length;
    let kept: number[] | null = null;
    let all = n === events.length;
    for (let j = 0; j < n; j++) {
      const i = candidates === null ? j : candidates[j]!;
      const ev = events[i]!;
      const keep =
        (ev.type === 'PUT' ? !this.noPut : !this.noDelete) &&
        (inRange ||
          (rangeContains(this.range, bytesToLatin1(ev.kv.key)) &&
            (this.field === null || selectsEvent(this.field, entry, i))));
      if (keep) (kept ??= []).push(i);
      else all = false;
    }
    if (kept === null) return null;
    return all ? ALL : { indices: kept, key: kept.join(',') };
  }

  /** Queues the frames for one revision's events and moves the position past it. */
  enqueueEventsUnsafe(entry: WindowEntry, view: EventView): void {
    const revision = entry.batch.revision;
    const count = view.indices === null ? entry.batch.events.length : view.indices.length;
    const frames = this.encoder.eventFrames(entry, view, this);
    this.nextRevision = Revision(revision + 1);
    // The encoder's own filter (a label selector) may keep none of the events.
    if (frames.length === 0) return;
    for (let i = 0; i < frames.length; i++) {
      const frame = frames[i]!;
      // Count the events once, on the last fragment.
      this.push({
        frame,
        bytes: this.encoder.frameBytes(frame),
        revision,
        events: i === frames.length - 1 ? count : 0,
        whole: frames.length === 1,
      });
    }
    this.sentSinceTick = true;
    this.onReadable?.();
  }

  /** Queues a frame that carries no events (progress, cancel). */
  enqueueControl(frame: F): void {
    this.push({
      frame,
      bytes: this.encoder.frameBytes(frame),
      revision: 0,
      events: 0,
      whole: false,
    });
    this.onReadable?.();
  }

  /** The revision of the first queued event frame, if any (everything before it was taken). */
  firstQueuedRevision(): Revision | undefined {
    for (let i = this.head; i < this.queue.length; i++) {
      const r = this.queue[i]!.revision;
      if (r !== 0) return Revision(r);
    }
    return undefined;
  }

  /**
   * Drops the queued frames from the first event frame on (the watcher is being cancelled);
   * control frames before it (a "created" response) stay. Returns the dropped frame's revision:
   * the client has every event below it.
   */
  dropQueued(): Revision | undefined {
    let i = this.head;
    while (i < this.queue.length && this.queue[i]!.revision === 0) i++;
    if (i === this.queue.length) return undefined;
    const first = this.queue[i]!.revision;
    for (let j = i; j < this.queue.length; j++) this._queuedBytes -= this.queue[j]!.bytes;
    this.queue.length = i;
    return Revision(first);
  }

  /**
   * Takes frames in order, at least one if any are queued, stopping once `maxBytes` is reached.
   * The frames are appended to `into` when given (a connection collects many watchers' frames).
   * When the encoder merges (`merge`), consecutive whole revisions taken together leave as one
   * frame of at most `merge.maxBytes`; `bytes` counts them as they were queued.
   */
  take(maxBytes: number, into: F[] = []): Taken<F> {
    const out: Taken<F> = { frames: into, bytes: 0, events: 0 };
    const merge = this.encoder.merge;
    let run: F[] = [];
    let runBytes = 0;
    const endRun = () => {
      if (run.length === 0) return;
      out.frames.push(run.length === 1 ? run[0]! : merge!.frames(run));
      run = [];
      runBytes = 0;
    };
    let taken = 0;
    while (this.head < this.queue.length && (taken === 0 || out.bytes < maxBytes)) {
      const q = this.queue[this.head]!;
      this.queue[this.head] = undefined as unknown as Queued<F>;
      this.head++;
      if (merge !== undefined && q.whole) {
        if (runBytes + q.bytes > merge.maxBytes) endRun();
        run.push(q.frame);
        runBytes += q.bytes;
      } else {
        endRun();
        out.frames.push(q.frame);
      }
      taken++;
      out.bytes += q.bytes;
      out.events += q.events;
    }
    endRun();
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    const before = this._queuedBytes;
    this._queuedBytes -= out.bytes;
    if (before >= this.lowWaterBytes && this._queuedBytes < this.lowWaterBytes) this.onDrained?.();
    return out;
  }

  private push(q: Queued<F>): void {
    this.queue.push(q);
    this._queuedBytes += q.bytes;
  }
}

const ALL: EventView = { indices: null, key: 'all' };
