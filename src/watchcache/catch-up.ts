/**
 * Bringing a watcher from its start revision up to the live stream.
 *
 * A watcher whose start revision is in the past replays, in this order:
 * 1. from the store (`store.history`) while its position is older than the window;
 * 2. from the window (a {@link WindowInterval} cursor), a bounded number of entries per turn;
 * 3. on reaching the window's end it joins the index and the dispatcher takes over.
 *
 * Why this is exactly-once: the watcher's `nextRevision` moves past every revision it has
 * examined, and every enqueue checks it. Joining at the window's end means every entry that
 * the dispatcher had started (or will start) before the join was already examined here; entries
 * appended after the join are dispatched to it. A history read (snapshot at S >= c0, the cache's
 * revision at the call) examines every revision up to c0, so afterwards the position is at
 * least c0 + 1, and overlap with the window beyond c0 is removed by the position check.
 *
 * Pull, not push: replay stops while the watcher's queue is over its soft bound and resumes when
 * the consumer drains it. A catching-up watcher is never cancelled for being slow; if the window
 * moves on under it, it simply reads from the store again.
 */

import { isEtceteraError } from '../errors.js';
import { type EventBatch, Revision, type WatchableStore } from '../store/types.js';
import { WindowInterval } from './interval.js';
import { rangeToRequest } from './keys.js';
import type { ResolvedOptions } from './options.js';
import type { Cancellation, WindowEntry } from './types.js';
import type { WatchCache } from './watch-cache.js';
import { type Watcher, WatcherState } from './watcher.js';

/** What the catch-up needs from the cacher. */
export interface CatchUpHost {
  readonly store: WatchableStore;
  readonly cache: WatchCache;
  readonly options: ResolvedOptions;
  /** Moves a caught-up watcher into the index (state SYNCED). */
  joinSyncedUnsafe(w: Watcher<unknown>): void;
  finishUnsafe(w: Watcher<unknown>, cancellation: Cancellation): void;
  scheduleTurn(): void;
}

type AnyWatcher = Watcher<unknown>;

export class CatchUp {
  /** Watchers with window work to do, in round-robin order. */
  private readonly runnable = new Set<AnyWatcher>();
  /** Bumped when the store is reset: history reads from before must not move positions. */
  private generation = 0;

  constructor(private readonly host: CatchUpHost) {}

  get hasWork(): boolean {
    return this.runnable.size > 0;
  }

  add(w: AnyWatcher): void {
    w.state = WatcherState.CATCHING_UP;
    w.interval = null;
    this.runnable.add(w);
  }

  /** The watcher ended: forget it (a history read in flight sees `done` and stops). */
  remove(w: AnyWatcher): void {
    this.runnable.delete(w);
  }

  /** The watcher's queue went under its soft bound: replay can go on. */
  onDrained(w: AnyWatcher): void {
    if (w.state !== WatcherState.CATCHING_UP) return;
    if (!w.historyRunning && !this.runnable.has(w)) {
      this.runnable.add(w);
      this.host.scheduleTurn();
    }
  }

  /** The store was replaced: window cursors and running history reads are void. */
  reset(): void {
    this.generation++;
    for (const w of this.runnable) w.interval = null;
  }

  /** Replays window entries for runnable watchers, at most `budget` entries. Returns the work. */
  runUnsafe(budget: number): number {
    let used = 0;
    const soft = this.host.options.watcherBufferBytes;
    for (const w of [...this.runnable]) {
      if (used >= budget) break;
      if (w.done || w.historyRunning || w.queuedBytes >= soft) {
        this.runnable.delete(w); // a drain, the history reader or nothing re-adds it
        continue;
      }
      if (w.interval === null) {
        if (w.nextRevision < this.host.cache.windowFrom()) {
          this.runnable.delete(w);
          void this.readHistory(w);
          continue;
        }
        w.interval = new WindowInterval(this.host.cache.ring, w.nextRevision);
      }
      used += this.replayWindowUnsafe(w, budget - used, soft);
      if (this.runnable.has(w)) {
        // round robin: the next turn starts with someone else
        this.runnable.delete(w);
        this.runnable.add(w);
      }
    }
    return used;
  }

  private replayWindowUnsafe(w: AnyWatcher, budget: number, soft: number): number {
    let used = 0;
    while (used < budget && w.queuedBytes < soft) {
      const step = w.interval!.next();
      used++;
      if (step.kind === 'wrapped') {
        w.interval = null; // read the gap from the store next time
        return used;
      }
      if (step.kind === 'end') {
        this.runnable.delete(w);
        this.host.joinSyncedUnsafe(w);
        return used;
      }
      offerUnsafe(w, step.entry);
    }
    return used;
  }

  /**
   * Replays from the store from the watcher's position up to (at least) the cache's revision.
   * When the watcher's queue fills, the read stops (releasing the store's snapshot) and starts
   * again from the new position once the consumer has drained the queue.
   */
  private async readHistory(w: AnyWatcher): Promise<void> {
    const { store, cache, options } = this.host;
    const soft = options.watcherBufferBytes;
    const generation = this.generation;
    const c0 = cache.revision;
    w.historyRunning = true;
    try {
      const it = store.history(w.nextRevision, rangeToRequest(w.range))[Symbol.asyncIterator]();
      let complete = false;
      try {
        for (;;) {
          if (w.done || generation !== this.generation || w.queuedBytes >= soft) break;
          const r = await it.next();
          if (r.done) {
            complete = true;
            break;
          }
          if (!w.done && generation === this.generation) offerUnsafe(w, transientEntry(r.value));
        }
      } finally {
        if (!complete) await it.return?.();
      }
      if (complete && generation === this.generation && w.nextRevision <= c0) {
        w.nextRevision = Revision(c0 + 1);
      }
    } catch (e) {
      if (!w.done) this.host.finishUnsafe(w, historyFailure(e, w, cache.compactRevision));
    } finally {
      w.historyRunning = false;
      // Over the bound, the drain (onDrained) re-adds it; checked here so no wake-up is lost.
      if (!w.done && w.state === WatcherState.CATCHING_UP && w.queuedBytes < soft) {
        this.runnable.add(w);
        this.host.scheduleTurn();
      }
    }
  }
}

/** Examines one entry for a catching-up watcher: queue what it selects, move past it. */
function offerUnsafe(w: AnyWatcher, entry: WindowEntry): void {
  const revision = entry.batch.revision;
  if (revision < w.nextRevision) return;
  const view = w.viewOf(entry, null, false);
  if (view === null) w.nextRevision = Revision(revision + 1);
  else w.enqueueEventsUnsafe(entry, view);
}

/** A store history batch wrapped like a window entry (its encodings are not shared). */
function transientEntry(batch: EventBatch): WindowEntry {
  return { batch, bytes: 0 as WindowEntry['bytes'], encodings: new Map(), receivedAtMs: 0 };
}

function historyFailure(e: unknown, w: AnyWatcher, compactRevision: Revision): Cancellation {
  if (isEtceteraError(e, 'ERR_COMPACTED')) {
    const at = e.details.compactRevision ?? compactRevision;
    return { reason: 'COMPACTED', compactRevision: Revision(at) };
  }
  const message = e instanceof Error ? e.message : String(e);
  return { reason: 'FAILED', resumeRevision: w.nextRevision, message };
}
