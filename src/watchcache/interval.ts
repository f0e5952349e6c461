/**
 * A cursor over the window that survives across event-loop turns. Entries may be evicted
 * under it between turns (the ring only knows that its start index grew), so `next()` reports
 * `wrapped` instead of returning a different entry than the one the cursor points at.
 */

import type { HistoryRing } from './history-ring.js';
import type { WindowEntry } from './types.js';

export type IntervalStep =
  | { readonly kind: 'entry'; readonly entry: WindowEntry }
  /** The cursor reached the newest entry; more may arrive later. */
  | { readonly kind: 'end' }
  /** The entry the cursor points at was evicted: resume from elsewhere (the store). */
  | { readonly kind: 'wrapped' };

const END: IntervalStep = { kind: 'end' };
const WRAPPED: IntervalStep = { kind: 'wrapped' };

export class WindowInterval {
  private index: number;

  /** Starts at the first entry with revision >= `fromRevision` (throws ERR_WATCH_TOO_OLD). */
  constructor(
    private readonly ring: HistoryRing,
    fromRevision: number,
  ) {
    this.index = ring.indexAtOrAfter(fromRevision);
  }

  /** The ring index the next call of `next()` looks at. */
  get position(): number {
    return this.index;
  }

  next(): IntervalStep {
    if (this.index < this.ring.startIndex) return WRAPPED;
    if (this.index >= this.ring.endIndex) return END;
    const entry = this.ring.at(this.index);
    this.index++;
    return { kind: 'entry', entry };
  }
}
