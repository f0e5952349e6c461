/**
 * A work queue keyed by object (client-go's rate-limited queue): a key waits in the queue
 * at most once however often it is added; a key being processed is not handed to a second
 * worker, and an add meanwhile hands it out again once `done` is called. `addRateLimited`
 * delays a key by a per-key exponential backoff (base × 2^failures, capped) until `forget`.
 *
 * Invariant: every key is in at most one of {queued, processing}; `dirty` ⊆ queued ∪
 * processing-and-re-added.
 */

export interface WorkQueueOptions {
  /** First retry delay of a failing key. Default 5 ms. */
  baseDelayMs?: number;
  /** Longest retry delay. Default 30 s. */
  maxDelayMs?: number;
}

export class WorkQueue<K extends string = string> {
  private readonly queue: K[] = [];
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly failures = new Map<K, number>();
  private readonly timers = new Map<K, NodeJS.Timeout>();
  private readonly waiters: ((k: K | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(options: WorkQueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 5;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
  }

  /** Keys waiting (not those being processed). */
  get length(): number {
    return this.queue.length;
  }

  get isShutDown(): boolean {
    return this.shuttingDown;
  }

  add(key: K): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
    } else this.queue.push(key);
  }

  /** Adds the key after `ms` (an earlier pending delay for the key wins). */
  addAfter(key: K, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    if (this.timers.has(key)) return;
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.timers.set(key, timer);
  }

  /** Adds the key after its backoff, and counts a failure for it. */
  addRateLimited(key: K): void {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    this.addAfter(key, this.backoffMs(n));
  }

  /** The delay the next addRateLimited of `key` would wait. */
  backoffMs(failures: number): number {
    return Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(failures, 30));
  }

  numRequeues(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  /** Clears the key's failure count (after a success). */
  forget(key: K): void {
    this.failures.delete(key);
  }

  /** The next key to process; undefined once the queue is shut down. */
  get(): Promise<K | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks the key processed; a key added meanwhile is queued again. */
  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  /** Stops handing out keys; pending `get`s resolve undefined. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.queue.length = 0;
    this.dirty.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
