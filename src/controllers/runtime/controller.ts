/**
 * The controller runtime: one work queue of object keys per controller, fed by informer
 * handlers, drained by a few workers that call the controller's one reconcile function.
 * A reconcile that throws is retried with the queue's per-key exponential backoff; a 409
 * Conflict (someone wrote first) is retried at once-ish (the next reconcile reads the
 * newer object from the informer); a success forgets the key's failures. A reconcile may
 * ask to be called again later (`{ requeueAfterMs }`), for time-based work.
 *
 * Reconcile functions must be idempotent: they compare desired with observed state and
 * act on the difference, so running one twice, or after a crash, does no harm.
 */
import { isKubeApiError } from '../../client/k8s/errors.js';
import { WorkQueue, type WorkQueueOptions } from '../../client/k8s/workqueue.js';

// biome-ignore lint/suspicious/noConfusingVoidType: most reconciles return nothing.
export type ReconcileResult = void | { requeueAfterMs: number };

export interface ControllerLogger {
  warn(obj: object, msg?: string): void;
}

export interface ControllerOptions extends WorkQueueOptions {
  /** Concurrent reconciles (of different keys). Default 2. */
  workers?: number;
  logger?: ControllerLogger;
}

export interface ControllerStats {
  reconciles: number;
  failures: number;
  conflicts: number;
}

export class Controller {
  readonly queue: WorkQueue;
  readonly stats: ControllerStats = { reconciles: 0, failures: 0, conflicts: 0 };
  private workers: Promise<void>[] = [];

  constructor(
    readonly name: string,
    private readonly reconcile: (key: string) => Promise<ReconcileResult>,
    private readonly options: ControllerOptions = {},
  ) {
    this.queue = new WorkQueue(options);
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  start(): void {
    const n = this.options.workers ?? 2;
    for (let i = 0; i < n; i++) this.workers.push(this.work());
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.workers);
    this.workers = [];
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      this.stats.reconciles++;
      try {
        const r = await this.reconcile(key);
        this.queue.forget(key);
        if (r && r.requeueAfterMs >= 0) this.queue.addAfter(key, r.requeueAfterMs);
      } catch (e) {
        if (isKubeApiError(e, 409)) this.stats.conflicts++;
        else {
          this.stats.failures++;
          if (this.queue.numRequeues(key) >= 3) {
            this.options.logger?.warn(
              { controller: this.name, key, err: String(e) },
              'reconcile failed',
            );
          }
        }
        this.queue.addRateLimited(key);
      } finally {
        this.queue.done(key);
      }
    }
  }
}
