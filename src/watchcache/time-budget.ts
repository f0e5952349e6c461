/**
 * A shared, refilling allowance of grace time for slow watchers.
 *
 * When a watcher's buffer goes over its bound, the cacher takes whatever budget is available
 * and gives it to that watcher as its grace period; what the watcher does not use (it drained
 * in time) goes back. The budget refills at `refillMsPerSecond` up to `maxMs`. So however many
 * watchers are slow at once, the total grace handed out per second is bounded, and a storm of
 * slow watchers ends in prompt cancellations rather than unbounded buffering.
 */

import type { Clock } from '../store/types.js';

export class TimeBudget {
  private budgetMs: number;
  private lastRefillMs: number;

  constructor(
    private readonly clock: Clock,
    private readonly maxMs: number,
    private readonly refillMsPerSecond: number,
  ) {
    this.budgetMs = maxMs;
    this.lastRefillMs = clock.now();
  }

  /** Takes all the budget available now (possibly 0). */
  takeAvailable(): number {
    this.refill();
    const taken = this.budgetMs;
    this.budgetMs = 0;
    return taken;
  }

  /** Gives back grace that was not used. */
  returnUnused(ms: number): void {
    if (ms <= 0) return;
    this.refill();
    this.budgetMs = Math.min(this.maxMs, this.budgetMs + ms);
  }

  /** The budget now (for tests and stats). */
  available(): number {
    this.refill();
    return this.budgetMs;
  }

  private refill(): void {
    const now = this.clock.now();
    const elapsed = now - this.lastRefillMs;
    if (elapsed <= 0) return;
    this.lastRefillMs = now;
    this.budgetMs = Math.min(this.maxMs, this.budgetMs + (elapsed * this.refillMsPerSecond) / 1000);
  }
}
