/**
 * The event window: the most recent batches, one per revision, in a ring.
 *
 * Invariants (checked by `valid()` in tests, trusted elsewhere):
 * 1. `startIndex <= endIndex`; both only grow. Entry i (startIndex <= i < endIndex) lives in
 *    slot `i % capacity`; slots outside that span are empty.
 * 2. Revisions strictly increase with the index.
 * 3. `coveredFrom` <= the revision of entry startIndex (when there is one): every batch with a
 *    revision >= `coveredFrom` that the store has applied so far is in the ring. Evicting an
 *    entry at revision r sets `coveredFrom` to r + 1.
 * 4. `events` and `bytes` are the sums over the entries present.
 *
 * Growth is bounded: capacity doubles from the initial slot count up to `maxSlots`. The caller
 * decides what to evict (it never evicts a batch not yet dispatched, see cacher.ts), so `push`
 * may grow past `maxSlots` when dispatch lags; `overLimits` then stays true until it catches up.
 */

import { EtceteraError } from '../errors.js';
import { Revision } from '../store/types.js';
import type { WindowEntry } from './types.js';

export interface RingLimits {
  initialSlots: number;
  maxSlots: number;
  maxEvents: number;
  maxBytes: number;
}

export class HistoryRing {
  private slots: (WindowEntry | undefined)[];
  private _startIndex = 0;
  private _endIndex = 0;
  private _events = 0;
  private _bytes = 0;
  private _coveredFrom: Revision;

  constructor(
    private readonly limits: RingLimits,
    /** The first revision the ring will receive (the store's revision + 1 at start). */
    coveredFrom: Revision,
  ) {
    this.slots = new Array(limits.initialSlots);
    this._coveredFrom = coveredFrom;
  }

  get startIndex(): number {
    return this._startIndex;
  }
  get endIndex(): number {
    return this._endIndex;
  }
  get length(): number {
    return this._endIndex - this._startIndex;
  }
  get capacity(): number {
    return this.slots.length;
  }
  get events(): number {
    return this._events;
  }
  get bytes(): number {
    return this._bytes;
  }
  /** Every batch at or after this revision is in the ring (invariant 3). */
  get coveredFrom(): Revision {
    return this._coveredFrom;
  }

  /** The entry at `index`. Throws when the index is outside [startIndex, endIndex). */
  at(index: number): WindowEntry {
    const e =
      index >= this._startIndex && index < this._endIndex
        ? this.slots[index % this.slots.length]
        : undefined;
    if (e === undefined)
      throw new RangeError(`ring index ${index} outside [${this._startIndex}, ${this._endIndex})`);
    return e;
  }

  /** The newest entry, if any. */
  last(): WindowEntry | undefined {
    return this._endIndex > this._startIndex ? this.at(this._endIndex - 1) : undefined;
  }

  push(entry: WindowEntry): void {
    const prev = this.last();
    if (prev !== undefined && entry.batch.revision <= prev.batch.revision) {
      throw new EtceteraError('ERR_INVALID_ARGUMENT', {
        detail: `window batch revision ${entry.batch.revision} after ${prev.batch.revision}`,
      });
    }
    if (this.length === this.slots.length) this.grow();
    this.slots[this._endIndex % this.slots.length] = entry;
    this._endIndex++;
    this._events += entry.batch.events.length;
    this._bytes += entry.bytes;
  }

  /** Whether the window holds more than its limits allow (the caller evicts). */
  overLimits(): boolean {
    return (
      this.length > this.limits.maxSlots ||
      this._events > this.limits.maxEvents ||
      this._bytes > this.limits.maxBytes
    );
  }

  /** Removes the oldest entry. */
  evictOldest(): WindowEntry {
    const e = this.at(this._startIndex);
    this.slots[this._startIndex % this.slots.length] = undefined;
    this._startIndex++;
    this._events -= e.batch.events.length;
    this._bytes -= e.bytes;
    this._coveredFrom = Revision(e.batch.revision + 1);
    return e;
  }

  /**
   * The index of the first entry with revision >= `revision` (endIndex when there is none).
   * Throws ERR_WATCH_TOO_OLD when `revision` < coveredFrom: the ring no longer knows what
   * happened there.
   */
  indexAtOrAfter(revision: number): number {
    if (revision < this._coveredFrom) {
      throw new EtceteraError('ERR_WATCH_TOO_OLD', {
        detail: `revision ${revision} is older than the window (from ${this._coveredFrom})`,
      });
    }
    let lo = this._startIndex;
    let hi = this._endIndex;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(mid).batch.revision < revision) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Checks invariants 1, 2 and 4. For tests. */
  valid(): boolean {
    let events = 0;
    let bytes = 0;
    let prev = -1;
    for (let i = this._startIndex; i < this._endIndex; i++) {
      const e = this.at(i);
      if (e.batch.revision <= prev) return false;
      prev = e.batch.revision;
      events += e.batch.events.length;
      bytes += e.bytes;
    }
    const first = this.length > 0 ? this.at(this._startIndex).batch.revision : Infinity;
    return events === this._events && bytes === this._bytes && this._coveredFrom <= first;
  }

  /** Doubles the slot array, re-placing entries at index % newCapacity. */
  private grow(): void {
    const next: (WindowEntry | undefined)[] = new Array(this.slots.length * 2);
    for (let i = this._startIndex; i < this._endIndex; i++) next[i % next.length] = this.at(i);
    this.slots = next;
  }
}
