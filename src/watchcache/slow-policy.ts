/**
 * Stage 3 of dispatch: what happens to a synced watcher whose queue is over its soft bound.
 *
 * The first time it crosses the bound it gets a grace period: whatever the shared
 * {@link TimeBudget} holds right now (possibly nothing). If it is still over the bound at an
 * enqueue after the grace ran out, or at any time over the hard bound, it has expired and the
 * cacher cancels it. When its consumer drains it under the bound in time, the unused part of
 * the grace goes back to the budget. The check is lazy (at enqueue, no timers): a watcher that
 * receives nothing more holds at most what it already has.
 */

import type { Clock } from '../store/types.js';
import type { WatchTally } from './tally.js';
import { TimeBudget } from './time-budget.js';
import type { Watcher } from './watcher.js';

export class SlowPolicy {
  private readonly budget: TimeBudget;

  constructor(
    /** Its `slowNow` counts the watchers over their bound now. */
    private readonly tally: WatchTally,
    private readonly clock: Clock,
    private readonly hardBytes: number,
    budgetMaxMs: number,
    refillMsPerSecond: number,
  ) {
    this.budget = new TimeBudget(clock, budgetMaxMs, refillMsPerSecond);
  }

  /** Grace left in the shared budget (for stats). */
  available(): number {
    return this.budget.available();
  }

  /** Whether `w`, over its soft bound, must be cancelled now. Grants grace on the first call. */
  expired(w: Watcher<unknown>): boolean {
    if (w.queuedBytes > this.hardBytes) return true;
    const now = this.clock.now();
    if (w.overSinceMs === null) {
      w.overSinceMs = now;
      this.tally.slowNow++;
      w.graceMs = this.budget.takeAvailable();
      return w.graceMs <= 0;
    }
    return now - w.overSinceMs >= w.graceMs;
  }

  /** `w` went under its soft bound: the grace it did not use goes back. */
  drained(w: Watcher<unknown>): void {
    if (w.overSinceMs === null) return;
    this.budget.returnUnused(w.graceMs - (this.clock.now() - w.overSinceMs));
    w.overSinceMs = null;
    w.graceMs = 0;
    this.tally.slowNow--;
  }

  /** `w` ended: it no longer counts as over its bound (its grace is not returned). */
  forget(w: Watcher<unknown>): void {
    if (w.overSinceMs === null) return;
    w.overSinceMs = null;
    w.graceMs = 0;
    this.tally.slowNow--;
  }
}
