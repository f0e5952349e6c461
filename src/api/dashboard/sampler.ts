/**
 * The dashboard's time series: once a second, while a dashboard is open, a reading of a few
 * cumulative figures the member already keeps (the store revision, the watch cache's events
 * handed to consumers, the buckets of its dispatch latency histogram) becomes one sample of
 * rates and latency percentiles over that second. The last `capacity` samples are kept in a
 * ring; a reading costs O(histogram buckets), whatever the number of watchers.
 *
 * The sampler runs only while someone looks: `touch()` (each /dashboard/stats request) starts
 * it, and it stops by itself `idleMs` after the last touch. Its timer never holds the process.
 */

/** Cumulative figures at one moment. */
export interface Reading {
  /** Clock ms. */
  at: number;
  revision: number;
  /** Events handed to watch consumers so far. */
  eventsSent: number;
  /** The latency histogram's cumulative bucket counts, upper bounds in seconds, +Inf last. */
  buckets: readonly { le: number; count: number }[];
}

/** One second's figures; latencies are null when nothing was dispatched in it. */
export interface Sample {
  /** Clock ms at the end of the interval. */
  t: number;
  writesPerS: number;
  eventsPerS: number;
  p50Ms: number | null;
  p99Ms: number | null;
}

/**
 * The q-quantile (0 < q ≤ 1) of the observations between two readings of a cumulative
 * histogram, by linear interpolation inside the bucket that holds it (as Prometheus'
 * histogram_quantile does), in the buckets' unit. Null when no observation fell in between.
 * An observation in the +Inf bucket counts as the largest finite bound.
 */
export function quantileBetween(
  before: readonly { le: number; count: number }[],
  after: readonly { le: number; count: number }[],
  q: number,
): number | null {
  const n = after.length;
  if (n === 0 || before.length !== n) return null;
  const total = after[n - 1]!.count - before[n - 1]!.count;
  if (total <= 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (let i = 0; i < n; i++) {
    const upper = after[i]!.le;
    const cum = after[i]!.count - before[i]!.count;
    if (cum >= rank) {
      if (!Number.isFinite(upper)) return lower;
      const inBucket = cum - below;
      return inBucket <= 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
    }
    lower = upper;
    below = cum;
  }
  return lower;
}

/** The sample for the interval between two readings. */
export function sampleBetween(a: Reading, b: Reading): Sample {
  const seconds = Math.max(1e-3, (b.at - a.at) / 1000);
  const ms = (v: number | null) => (v === null ? null : v * 1000);
  return {
    t: b.at,
    writesPerS: Math.max(0, b.revision - a.revision) / seconds,
    eventsPerS: Math.max(0, b.eventsSent - a.eventsSent) / seconds,
    p50Ms: ms(quantileBetween(a.buckets, b.buckets, 0.5)),
    p99Ms: ms(quantileBetween(a.buckets, b.buckets, 0.99)),
  };
}

export interface SamplerOptions {
  /** Samples kept. Default 300 (five minutes at 1 Hz). */
  capacity?: number;
  periodMs?: number;
  /** Stops this long after the last touch. Default one minute. */
  idleMs?: number;
  now?: () => number;
}

export class Sampler {
  private readonly ring: Sample[] = [];
  private readonly capacity: number;
  private readonly periodMs: number;
  private readonly idleMs: number;
  private readonly now: () => number;
  private last: Reading | undefined;
  private lastTouch = 0;
  private timer: NodeJS.Timeout | undefined;
  private reading = false;

  constructor(
    private readonly read: () => Promise<Reading>,
    options: SamplerOptions = {},
  ) {
    this.capacity = options.capacity ?? 300;
    this.periodMs = options.periodMs ?? 1000;
    this.idleMs = options.idleMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /** Someone looks: keep (or start) sampling. */
  touch(): void {
    this.lastTouch = this.now();
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.tick(), this.periodMs);
    this.timer.unref();
    void this.tick();
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  /** The samples kept, oldest first. */
  samples(): readonly Sample[] {
    return this.ring;
  }

  /** Takes a reading now; a sample when there was a reading before. */
  async tick(): Promise<void> {
    if (this.now() - this.lastTouch > this.idleMs) return this.stop();
    if (this.reading) return;
    this.reading = true;
    try {
      const r = await this.read();
      if (this.last !== undefined && r.at > this.last.at) {
        this.ring.push(sampleBetween(this.last, r));
        if (this.ring.length > this.capacity) this.ring.shift();
      }
      this.last = r;
    } catch {
      // A reading that fails (the member is closing) leaves a gap, nothing more.
    } finally {
      this.reading = false;
    }
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    // The next start measures from its own first reading, not across the pause.
    this.last = undefined;
  }
}
