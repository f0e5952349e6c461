/**
 * The watcher registry and the dispatcher: the heart of the fan-out.
 *
 * Data flow. The store calls `onBatch` synchronously for every revision; the cacher appends the
 * batch to the window and returns at once (the writer is never delayed). Fan-out runs in later
 * event-loop turns: dispatch in window order (at most `maxDeliveriesPerTurn` (watcher, batch)
 * deliveries), catch-up (at most `maxCatchUpEntriesPerTurn` replay steps), then the flushes
 * the connections asked for ({@link requestFlush}, in FIFO order), all inside one time slice
 * per turn (`fanoutSliceMs`; dispatch takes at most half of it while flushes wait). What is
 * left goes on in the next turn, after the event loop has polled I/O: a put, a read or a
 * timer waits at most about one slice for the fan-out, however many watchers and connections
 * there are. Under load the connections are flushed less often and each write carries more
 * frames, which is what lets the fan-out catch up instead of starving everyone else.
 *
 * Dispatching one entry, in three stages (as Kubernetes' cacher does):
 * 1. Match: ask the index which synced watchers can contain each event's key (never a scan of
 *    all watchers) and snapshot that list; a watcher that joins later caught up past it.
 * 2. Enqueue without blocking: each watcher's encoder frames the events (sharing the encoded
 *    bytes, see encoders/) and the frames go to the watcher's queue.
 * 3. Slow watchers: a watcher whose queue is over its soft bound gets a grace period from the
 *    shared {@link TimeBudget}; still over it when the grace ran out, or over the hard bound, it
 *    is cancelled with reason SLOW and the revision to resume from. Nothing else waits for it.
 *
 * Functions suffixed `Unsafe` run inside a dispatch turn or the store callback and assume the
 * registry is consistent; they must not await.
 */

import { EtceteraError } from '../errors.js';
import { type EventBatch, Revision, type WatchableStore } from '../store/types.js';
import { bytesToLatin1 } from '../wire/bytes.js';
import { CatchUp, type CatchUpHost } from './catch-up.js';
import { FieldIndex, type FieldSelection } from './field-index.js';
import {
  type WatchCallback,
  WatchIterator,
  type WatchSubscription,
  watchCallback,
} from './in-process.js';
import { createMetrics, type WatchMetrics } from './metrics.js';
import { type ResolvedOptions, resolveOptions, type WatchCacheOptions } from './options.js';
import { SlowPolicy } from './slow-policy.js';
import { WatchTally } from './tally.js';
import {
  type Cancellation,
  type FrameEncoder,
  WatcherId,
  type WatchOptions,
  type WindowEntry,
} from './types.js';
import { WatchCache } from './watch-cache.js';
import { type Taken, Watcher, WatcherState, watcherSpec } from './watcher.js';
import { WatcherIndex } from './watcher-index.js';

type AnyWatcher = Watcher<unknown>;

const NOOP = (): void => {};

/** One entry being dispatched: the matched watchers and, per watcher, which events. */
interface Dispatch {
  readonly entry: WindowEntry;
  readonly targets: AnyWatcher[];
  /** Per target, the indices of its events; null (or a null array) means all of them. */
  readonly candidates: (readonly number[] | null)[] | null;
  pos: number;
}

/** Extra settings for one watcher. */
export interface AddWatcherOptions<F> {
  /** The id the client knows the watch by (etcd watch_id). Default 0. */
  watchId?: number;
  /** Frame to queue before anything else (etcd's "created" response), given the revision. */
  createdFrame?: (revision: Revision) => F;
  /**
   * Find the watcher by a field's value (field-index.ts) rather than by its range alone: it
   * gets the events of its range whose old or new value of the field is `value`.
   */
  field?: FieldSelection;
}

export class Cacher implements CatchUpHost {
  readonly options: ResolvedOptions;
  readonly cache: WatchCache;
  readonly metrics: WatchMetrics;
  /** Counters by connection kind, slow and ended watchers (O(1) upkeep; see tally.ts). */
  readonly tally = new WatchTally();
  private readonly index = new WatcherIndex<AnyWatcher>();
  private readonly fieldIndex = new FieldIndex<AnyWatcher>();
  private readonly watchers = new Set<AnyWatcher>();
  private readonly progressWatchers = new Set<AnyWatcher>();
  private readonly catchUp: CatchUp;
  private readonly slow: SlowPolicy;
  /** The next window index to dispatch; entries before it went to every synced watcher. */
  private dispatchIndex: number;
  private current: Dispatch | null = null;
  private _dispatchedRevision: Revision;
  private turnScheduled = false;
  /** Bytes one connection flush may take now (busyFlushBytes in a busy turn). */
  private flushRoom = Number.POSITIVE_INFINITY;
  /** Connection flushes waiting for a fan-out turn, FIFO. */
  private flushes: (() => void)[] = [];
  private flushHead = 0;
  private nextId = 1;
  private closed = false;
  private readonly unsubscribe: () => void;
  private readonly unsubscribeReset: () => void;
  private cancelProgressTimer: () => void = () => {};

  constructor(
    readonly store: WatchableStore,
    options: WatchCacheOptions = {},
  ) {
    this.options = resolveOptions(options);
    this.cache = new WatchCache(store, this.options);
    this.metrics = createMetrics(this.options.registry, this.options.metricPrefix);
    this.catchUp = new CatchUp(this);
    const o = this.options;
    this.slow = new SlowPolicy(
      this.tally,
      o.clock,
      o.watcherHardBufferBytes,
      o.slowBudgetMaxMs,
      o.slowBudgetRefillMsPerSecond,
    );
    this.dispatchIndex = this.cache.ring.endIndex;
    this._dispatchedRevision = this.cache.revision;
    this.unsubscribe = store.subscribe((batch) => this.onBatchUnsafe(batch));
    this.unsubscribeReset = store.onReset((revision) => this.onResetUnsafe(revision));
    this.armProgressTimer();
  }

  /** The revision the cache has reached. */
  get revision(): Revision {
    return this.cache.revision;
  }

  /** Every entry up to this revision has been queued for every synced watcher. */
  get dispatchedRevision(): Revision {
    return this._dispatchedRevision;
  }

  /**
   * Registers a watcher whose frames `encoder` builds. The consumer (a connection, an in-process
   * reader) sets `onReadable` and takes frames with {@link take}. A start revision below the
   * compaction point gives a watcher whose only frame (after `createdFrame`) is its
   * COMPACTED cancellation. Throws ERR_WATCH_RANGE_EMPTY, ERR_INVALID_ARGUMENT, ERR_CLOSED.
   */
  addWatcher<F>(
    opts: WatchOptions,
    encoder: FrameEncoder<F>,
    extra: AddWatcherOptions<F> = {},
  ): Watcher<F> {
    if (this.closed) throw new EtceteraError('ERR_CLOSED');
    const start = opts.startRevision ?? 0;
    if (!Number.isSafeInteger(start) || start < 0) {
      throw new EtceteraError('ERR_INVALID_ARGUMENT', {
        detail: 'startRevision must be an integer >= 0',
      });
    }
    const w = this.newWatcher(opts, encoder, extra.watchId ?? 0, extra.field ?? null);
    if (extra.createdFrame) w.enqueueControl(extra.createdFrame(this.cache.revision));
    this.watchers.add(w);
    this.metrics.watchers.inc();
    if (w.progressNotify) this.progressWatchers.add(w);
    const compact = this.store.compactRevision;
    const current = this.cache.revision;
    if (start > 0 && start < compact) {
      w.nextRevision = Revision(start);
      this.finishUnsafe(w, { reason: 'COMPACTED', compactRevision: compact });
    } else if (start === 0 || start > current) {
      w.nextRevision = Revision(start === 0 ? current + 1 : start);
      this.joinSyncedUnsafe(w);
    } else {
      w.nextRevision = Revision(start);
      this.catchUp.add(w);
      this.scheduleTurn();
    }
    return w;
  }

  /** An in-process watch with a callback (see in-process.ts). */
  watch(opts: WatchOptions, onResponse: WatchCallback): WatchSubscription {
    return watchCallback(this, opts, onResponse);
  }

  /** An in-process watch as an async iterator (see in-process.ts). */
  watchIterator(opts: WatchOptions): WatchIterator {
    return new WatchIterator(this, opts);
  }

  /** Resolves once the cache has reached `revision` (ERR_CACHE_NOT_FRESH after the timeout). */
  waitUntilFresh(revision: number, timeoutMs?: number): Promise<void> {
    return this.cache.waitUntilFresh(revision, timeoutMs);
  }

  /** Cancels a watcher (default: at the client's request). Idempotent. */
  cancel(w: Watcher<unknown>, cancellation: Cancellation = { reason: 'CLIENT' }): void {
    this.finishUnsafe(w, cancellation);
  }

  /**
   * Queues a progress notification at the highest revision R such that every event at or below
   * R is already queued for the watcher (so it always follows them).
   */
  requestProgress(w: Watcher<unknown>): void {
    if (w.done) return;
    w.enqueueControl(w.encoder.progressFrame(this.coveredRevision(w), w));
  }

  /** The highest revision through which every event for `w` has been queued. */
  coveredRevision(w: Watcher<unknown>): Revision {
    const examined = Math.min(w.nextRevision - 1, this.cache.revision);
    if (w.state === WatcherState.SYNCED)
      return Revision(Math.max(examined, this._dispatchedRevision));
    return Revision(Math.max(0, examined));
  }

  /** Takes frames from a watcher for its consumer (appending to `into`), counting them. */
  take<F>(w: Watcher<F>, maxBytes: number, into?: F[]): Taken<F> {
    const t = w.take(maxBytes, into);
    if (t.events > 0) this.metrics.eventsSent.inc(t.events);
    if (t.bytes > 0) this.metrics.bytesSent.inc(t.bytes);
    return t;
  }

  /** Most bytes of frames a connection's flush should take now (bounded in a busy turn). */
  get flushRoomBytes(): number {
    return this.flushRoom;
  }

  /**
   * Runs `flush` (a connection's write) in a coming fan-out turn, inside its time slice, after
   * the flushes asked for before it.
   */
  requestFlush(flush: () => void): void {
    if (this.closed) return;
    this.flushes.push(flush);
    this.scheduleTurn();
  }

  /** Stops everything: every watcher ends with CLOSED; waitUntilFresh callers get ERR_CLOSED. */
  close(): void {
    if (this.closed) return;
    for (const w of [...this.watchers]) {
      const resumeRevision = Revision(this.coveredRevision(w) + 1);
      this.finishUnsafe(w, {
        reason: 'CLOSED',
        resumeRevision,
        message: 'etcetera: watch cache closed',
      });
    }
    this.closed = true;
    this.unsubscribe();
    this.unsubscribeReset();
    this.cancelProgressTimer();
    this.cache.close();
  }

  /** Counters for tests and diagnostics. */
  stats() {
    let queuedBytes = 0;
    let synced = 0;
    for (const w of this.watchers) {
      queuedBytes += w.queuedBytes;
      if (w.state === WatcherState.SYNCED) synced++;
    }
    const ring = this.cache.ring;
    return {
      watchers: this.watchers.size,
      synced,
      queuedBytes,
      revision: this.cache.revision,
      dispatchedRevision: this._dispatchedRevision,
      windowEntries: ring.length,
      windowEvents: ring.events,
      windowBytes: ring.bytes,
      windowFrom: this.cache.windowFrom(),
      matchWork: this.index.work + this.fieldIndex.work,
      slowBudgetMs: this.slow.available(),
    };
  }

  // --- CatchUpHost ----------------------------------------------------------------------

  joinSyncedUnsafe(w: AnyWatcher): void {
    w.state = WatcherState.SYNCED;
    w.interval = null;
    if (w.field === null) this.index.add(w);
    else this.fieldIndex.add(w);
  }

  private unindexUnsafe(w: AnyWatcher): void {
    if (w.field === null) this.index.remove(w);
    else this.fieldIndex.remove(w);
  }

  finishUnsafe(w: AnyWatcher, cancellation: Cancellation): void {
    if (w.done) return;
    if (w.state === WatcherState.SYNCED) this.unindexUnsafe(w);
    this.catchUp.remove(w);
    w.state = WatcherState.DONE;
    w.interval = null;
    this.watchers.delete(w);
    this.progressWatchers.delete(w);
    this.metrics.watchers.dec();
    if (cancellation.reason === 'SLOW') this.metrics.slowCancelled.inc();
    this.tally.ended[cancellation.reason]++;
    this.slow.forget(w);
    // Undelivered events are dropped; the resume revision must then point at the first of them.
    const first = w.dropQueued();
    let c = cancellation;
    if ('resumeRevision' in c && first !== undefined && first < c.resumeRevision) {
      c = { ...c, resumeRevision: first };
    }
    w.cancellation = c;
    w.enqueueControl(w.encoder.canceledFrame(c, w, this.cache.revision));
  }

  scheduleTurn(): void {
    if (this.turnScheduled || this.closed) return;
    this.turnScheduled = true;
    this.options.scheduler(() => this.runTurn());
  }

  // --- dispatch -------------------------------------------------------------------------

  private onBatchUnsafe(batch: EventBatch): void {
    if (this.closed) return;
    this.cache.appendUnsafe(batch);
    this.scheduleTurn();
  }

  private runTurn(): void {
    this.turnScheduled = false;
    if (this.closed) return;
    const o = this.options;
    const start = o.clock.now();
    const busy = o.writesPending();
    const slice = busy ? o.busyFanoutSliceMs : o.fanoutSliceMs;
    const end = start + slice;
    const flushing = this.flushHead < this.flushes.length;
    this.dispatchSomeUnsafe(o.maxDeliveriesPerTurn, flushing ? start + slice / 2 : end);
    if (o.clock.now() < end) this.catchUp.runUnsafe(o.maxCatchUpEntriesPerTurn);
    this.cache.evictUnsafe(this.dispatchIndex);
    this.flushRoom = busy ? o.busyFlushBytes : Number.POSITIVE_INFINITY;
    this.runFlushes(end);
    this.flushRoom = Number.POSITIVE_INFINITY;
    const more = this.current !== null || this.dispatchIndex < this.cache.ring.endIndex;
    if (more || this.catchUp.hasWork || this.flushHead < this.flushes.length) this.scheduleTurn();
  }

  /**
   * The flushes asked for before this call, in order, until the slice ends (at least one, so
   * writes always move). Flushes asked for meanwhile wait for the next turn.
   */
  private runFlushes(end: number): void {
    const last = this.flushes.length;
    let ran = 0;
    while (this.flushHead < last && !this.closed) {
      if (ran > 0 && this.options.clock.now() >= end) break;
      const flush = this.flushes[this.flushHead]!;
      this.flushes[this.flushHead] = NOOP;
      this.flushHead++;
      ran++;
      flush();
    }
    if (this.flushHead === this.flushes.length) {
      this.flushes = [];
      this.flushHead = 0;
    } else if (this.flushHead > 1024 && this.flushHead * 2 > this.flushes.length) {
      this.flushes = this.flushes.slice(this.flushHead);
      this.flushHead = 0;
    }
  }

  /**
   * Dispatches window entries in order, at most `budget` deliveries, until the clock reaches
   * `end` (read every 64 deliveries).
   */
  private dispatchSomeUnsafe(budget: number, end: number): void {
    const ring = this.cache.ring;
    const clock = this.options.clock;
    let used = 0;
    let checkAt = 64;
    while (used < budget) {
      if (used >= checkAt) {
        if (clock.now() >= end) return;
        checkAt = used + 64;
      }
      if (this.current === null) {
        if (this.dispatchIndex >= ring.endIndex) return;
        this.current = this.matchUnsafe(ring.at(this.dispatchIndex));
      }
      const d = this.current;
      const { entry, targets, candidates } = d;
      const stop = Math.min(budget, checkAt);
      while (d.pos < targets.length && used < stop) {
        this.deliverUnsafe(targets[d.pos]!, entry, candidates === null ? null : candidates[d.pos]!);
        d.pos++;
        used++;
      }
      if (d.pos < targets.length) continue; // the clock or the budget decides, above
      this.current = null;
      this.dispatchIndex++;
      // The shared encodings have done their job; queued frames keep the bytes they use. A
      // replay from the window later encodes the entry again (once, for all its readers).
      entry.encodings.clear();
      this._dispatchedRevision = entry.batch.revision;
      this.metrics.dispatchLatency.observe((this.options.clock.now() - entry.receivedAtMs) / 1000);
      used++; // an entry nobody watches still costs a little
    }
  }

  /** Stage 1: the synced watchers that can contain the entry's events, from the index. */
  private matchUnsafe(entry: WindowEntry): Dispatch {
    const events = entry.batch.events;
    const targets: AnyWatcher[] = [];
    const fields = this.fieldIndex.size > 0;
    if (events.length === 1) {
      const key = bytesToLatin1(events[0]!.kv.key);
      const visit = (w: AnyWatcher) => targets.push(w);
      this.index.forEachMatch(key, visit);
      if (fields) this.fieldIndex.forEachMatch(entry, 0, key, visit);
      return { entry, targets, candidates: null, pos: 0 };
    }
    const byWatcher = new Map<AnyWatcher, number[]>();
    for (let i = 0; i < events.length; i++) {
      const visit = (w: AnyWatcher) => {
        const list = byWatcher.get(w);
        if (list === undefined) byWatcher.set(w, [i]);
        else list.push(i);
      };
      const key = bytesToLatin1(events[i]!.kv.key);
      this.index.forEachMatch(key, visit);
      if (fields) this.fieldIndex.forEachMatch(entry, i, key, visit);
    }
    const candidates: (readonly number[] | null)[] = [];
    for (const [w, list] of byWatcher) {
      targets.push(w);
      candidates.push(list.length === events.length ? null : list);
    }
    return { entry, targets, candidates, pos: 0 };
  }

  /** Stage 2 for one watcher, then stage 3 if its queue is over the bound. */
  private deliverUnsafe(
    w: AnyWatcher,
    entry: WindowEntry,
    candidates: readonly number[] | null,
  ): void {
    const revision = entry.batch.revision;
    if (w.state !== WatcherState.SYNCED || revision < w.nextRevision) return;
    const view = w.viewOf(entry, candidates, true);
    if (view === null) {
      w.nextRevision = Revision(revision + 1);
      return;
    }
    w.enqueueEventsUnsafe(entry, view);
    if (w.queuedBytes > this.options.watcherBufferBytes) this.maybeCancelSlowUnsafe(w);
  }

  /** Stage 3: cancel a watcher whose grace (slow-policy.ts) is over. */
  private maybeCancelSlowUnsafe(w: AnyWatcher): void {
    if (!this.slow.expired(w)) return;
    const first = w.dropQueued();
    const resumeRevision = first ?? Revision(this.coveredRevision(w) + 1);
    const message = `etcetera: watcher could not keep up (buffer over ${this.options.watcherBufferBytes} bytes); resume from revision ${resumeRevision}`;
    this.finishUnsafe(w, { reason: 'SLOW', resumeRevision, message });
  }

  /** The queue went under the soft bound: return unused grace, let replay continue. */
  private onDrained(w: AnyWatcher): void {
    this.slow.drained(w);
    this.catchUp.onDrained(w);
  }

  /** The store was replaced: start the window over; every watcher replays from the store. */
  private onResetUnsafe(revision: Revision): void {
    if (this.closed) return;
    this.cache.resetUnsafe(revision);
    this.current = null;
    this.dispatchIndex = this.cache.ring.endIndex;
    this._dispatchedRevision = revision;
    this.catchUp.reset();
    for (const w of this.watchers) {
      if (w.state === WatcherState.SYNCED) this.unindexUnsafe(w);
      this.catchUp.add(w);
    }
    this.scheduleTurn();
  }

  private newWatcher<F>(
    opts: WatchOptions,
    encoder: FrameEncoder<F>,
    watchId: number,
    field: FieldSelection | null,
  ): Watcher<F> {
    const spec = watcherSpec(opts, WatcherId(this.nextId++), watchId, encoder);
    const w = new Watcher<F>({ ...spec, field });
    w.lowWaterBytes = this.options.watcherBufferBytes;
    w.onDrained = () => this.onDrained(w as AnyWatcher);
    return w;
  }

  private armProgressTimer(): void {
    this.cancelProgressTimer = this.options.clock.setTimer(() => {
      if (this.closed) return;
      this.progressTickUnsafe();
      this.armProgressTimer();
    }, this.options.progressNotifyIntervalMs);
  }

  /**
   * etcd's progress_notify: each synced watcher that asked for it and got no events since the
   * last tick gets a progress notification.
   */
  progressTickUnsafe(): void {
    for (const w of this.progressWatchers) {
      if (w.state === WatcherState.SYNCED && !w.sentSinceTick) this.requestProgress(w);
      w.sentSinceTick = false;
    }
  }
}
