/**
 * The cache's state: the event window, the revision it has reached, and "wait until fresh".
 *
 * The cache learns of each revision from the store's `subscribe` (synchronously, in order)
 * through `appendUnsafe`. So its revision equals the store's between event-loop turns. On a
 * member that applies behind the leader, `waitUntilFresh(R)` is how a consistent read waits
 * for R to be applied before it reads from the cache.
 *
 * Compaction: the cache reads the store's compaction point when it needs it; it never serves
 * a revision the store would refuse. It also treats the compaction revision itself as outside
 * the window: at that revision the store keeps only what survives compaction (no tombstone, no
 * prevKv), so a watch from exactly there is served by the store, byte for byte as etcd does.
 */

import { EtceteraError } from '../errors.js';
import { type EventBatch, Revision, type WatchableStore } from '../store/types.js';
import { eventBytes } from './encoders/object.js';
import { HistoryRing } from './history-ring.js';
import type { ResolvedOptions } from './options.js';
import { ByteSize, type WindowEntry } from './types.js';

interface Waiter {
  readonly revision: number;
  readonly resolve: () => void;
  readonly reject: (e: Error) => void;
  cancelTimer: () => void;
}

export class WatchCache {
  private _ring: HistoryRing;
  private _revision: Revision;
  /** Waiters sorted by revision, ascending. */
  private waiters: Waiter[] = [];

  constructor(
    private readonly store: WatchableStore,
    private readonly options: ResolvedOptions,
  ) {
    this._revision = store.currentRevision;
    this._ring = this.newRing(this._revision);
  }

  get ring(): HistoryRing {
    return this._ring;
  }

  /** The newest revision the cache has applied. */
  get revision(): Revision {
    return this._revision;
  }

  /** The store's compaction point (0 if never compacted). */
  get compactRevision(): Revision {
    return this.store.compactRevision;
  }

  /**
   * The lowest revision a replay can start from using the window alone: every batch at or
   * after it is in the ring, and it is above the compaction point (see the file comment).
   */
  windowFrom(): Revision {
    return Revision(Math.max(this._ring.coveredFrom, this.store.compactRevision + 1));
  }

  /** Appends the store's next batch. Runs inside the store's subscribe callback. */
  appendUnsafe(batch: EventBatch): WindowEntry {
    let bytes = 64;
    for (const ev of batch.events) bytes += eventBytes(ev);
    const entry: WindowEntry = {
      batch,
      bytes: ByteSize(bytes),
      encodings: new Map(),
      receivedAtMs: this.options.clock.now(),
    };
    this._ring.push(entry);
    this._revision = batch.revision;
    this.releaseWaiters();
    return entry;
  }

  /**
   * Evicts old entries while the window is over its limits, never at or past `keepFrom` (the
   * first entry not yet dispatched). Entries at or below the compaction point go first.
   */
  evictUnsafe(keepFrom: number): void {
    const ring = this._ring;
    const compact = this.store.compactRevision;
    while (ring.startIndex < keepFrom) {
      const oldest = ring.at(ring.startIndex);
      if (!ring.overLimits() && oldest.batch.revision > compact) break;
      ring.evictOldest();
    }
  }

  /**
   * The store was replaced (a snapshot was installed): its history may have a gap, so the
   * window starts over empty at the new revision.
   */
  resetUnsafe(revision: Revision): void {
    this._ring = this.newRing(revision);
    this._revision = revision;
    this.releaseWaiters();
  }

  /**
   * Resolves once the cache has applied `revision`; rejects with ERR_CACHE_NOT_FRESH after
   * `timeoutMs` (default from options) and with ERR_CLOSED when the cache closes.
   */
  waitUntilFresh(revision: number, timeoutMs = this.options.freshTimeoutMs): Promise<void> {
    if (revision <= this._revision) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { revision, resolve, reject, cancelTimer: () => {} };
      waiter.cancelTimer = this.options.clock.setTimer(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(
          new EtceteraError('ERR_CACHE_NOT_FRESH', {
            currentRevision: this._revision,
            detail: `waited ${timeoutMs} ms for revision ${revision}`,
          }),
        );
      }, timeoutMs);
      let i = this.waiters.length;
      while (i > 0 && this.waiters[i - 1]!.revision > revision) i--;
      this.waiters.splice(i, 0, waiter);
    });
  }

  /** Rejects every waiter (the cache is closing). */
  close(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) {
      w.cancelTimer();
      w.reject(new EtceteraError('ERR_CLOSED'));
    }
  }

  private releaseWaiters(): void {
    let n = 0;
    while (n < this.waiters.length && this.waiters[n]!.revision <= this._revision) n++;
    if (n === 0) return;
    const ready = this.waiters.splice(0, n);
    for (const w of ready) {
      w.cancelTimer();
      w.resolve();
    }
  }

  private newRing(revision: Revision): HistoryRing {
    const o = this.options;
    return new HistoryRing(
      {
        initialSlots: o.windowInitialSlots,
        maxSlots: o.windowMaxSlots,
        maxEvents: o.windowMaxEvents,
        maxBytes: o.windowMaxBytes,
      },
      Revision(revision + 1),
    );
  }
}
