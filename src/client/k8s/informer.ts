/**
 * An informer: a local, indexed copy of a resource's objects kept equal to the server's by
 * list-then-watch, with add/update/delete handlers — the client-go reflector's contract.
 *
 * The loop:
 * 1. list (paged, one snapshot) and replace the cache with the result, dispatching add,
 *    update (resourceVersion changed) and delete (gone) for the difference; remember the
 *    list's resourceVersion;
 * 2. watch from that resourceVersion with bookmarks; every event (bookmarks included)
 *    moves the resume point to its resourceVersion;
 * 3. a stream the server ends (timeoutSeconds, shutdown) or a broken connection resumes the
 *    watch from the resume point (after a backoff when it failed), without re-listing;
 * 4. 410 Gone (an ERROR event or the HTTP status, e.g. because the history was compacted
 *    while disconnected) and any other ERROR event go back to 1.
 *
 * Invariant after each handled event: the cache equals the server's objects at the resume
 * point, restricted to the selectors. `hasSynced()` is true from the first completed list.
 */
import { type IndexFunc, ObjectCache } from './cache.js';
import { isKubeApiError, KubeApiError } from './errors.js';
import type { ResourceClient } from './resource-client.js';
import { type KubeObject, objectKey, type WatchEvent } from './types.js';

export interface InformerHandlers<T> {
  onAdd?(obj: T): void;
  /** Also called by resyncs, with the same object twice. */
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

export interface InformerOptions<T> {
  labelSelector?: string;
  fieldSelector?: string;
  /** Extra indexes of the cache (the namespace index is always there). */
  indexers?: Record<string, IndexFunc<T>>;
  /** Every so often, onUpdate(obj, obj) for every cached object. 0 (default): never. */
  resyncPeriodMs?: number;
  /** Page size of lists; 0 lists in one request. Default 500. */
  pageSize?: number;
  /** Ask for bookmarks (default true). */
  bookmarks?: boolean;
  /** The server ends each watch after this long; default a random 300–600 s as client-go. */
  watchTimeoutSeconds?: number;
  /**
   * A watch with no byte for this long is dropped and resumed (a half-open connection).
   * Default 90 s: etcetera sends a newline every 15 s and bookmarks every minute. 0: never.
   */
  watchIdleTimeoutMs?: number;
  /** Backoff after failures, doubling from initialMs to maxMs. Default 200 ms .. 30 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** Failures the informer recovers from (it keeps running). */
  onError?(err: unknown): void;
}

export interface InformerStats {
  lists: number;
  watches: number;
  /** Lists forced by 410 or ERROR events. */
  relists: number;
  bookmarks: number;
  events: number;
  failures: number;
}

type WatchEnd = 'ended' | 'relist';

export class Informer<T extends KubeObject = KubeObject> {
  readonly cache: ObjectCache<T>;
  readonly stats: InformerStats = {
    lists: 0,
    watches: 0,
    relists: 0,
    bookmarks: 0,
    events: 0,
    failures: 0,
  };
  private readonly handlers = new Set<InformerHandlers<T>>();
  private readonly abort = new AbortController();
  private resourceVersion: string | undefined;
  private synced = false;
  private running: Promise<void> | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private wakeSleep: (() => void) | undefined;
  private syncWaiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];

  constructor(
    private readonly client: ResourceClient<T>,
    private readonly options: InformerOptions<T> = {},
  ) {
    this.cache = new ObjectCache<T>(options.indexers);
  }

  /** Registers handlers; returns a function that removes them. */
  addHandlers(h: InformerHandlers<T>): () => void {
    this.handlers.add(h);
    return () => this.handlers.delete(h);
  }

  /** Starts the loop (idempotent). */
  start(): this {
    if (this.running || this.abort.signal.aborted) return this;
    this.running = this.run();
    const period = this.options.resyncPeriodMs ?? 0;
    if (period > 0) {
      this.resyncTimer = setInterval(() => this.resync(), period);
      this.resyncTimer.unref();
    }
    return this;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves after the first complete list; rejects if the informer stops first. */
  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.abort.signal.aborted) return Promise.reject(new Error('informer stopped'));
    return new Promise((resolve, reject) => this.syncWaiters.push({ resolve, reject }));
  }

  /** The resume point: the resourceVersion of the last list, event or bookmark. */
  get lastResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  list(): T[] {
    return this.cache.list();
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.getByName(namespace, name);
  }

  /** Stops the loop, aborting any request in flight; resolves when it has ended. */
  async stop(): Promise<void> {
    if (!this.abort.signal.aborted) this.abort.abort();
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.wakeSleep?.();
    for (const w of this.syncWaiters.splice(0)) w.reject(new Error('informer stopped'));
    await this.running;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async run(): Promise<void> {
    const { initialMs, maxMs } = this.options.backoff ?? { initialMs: 200, maxMs: 30_000 };
    let delay = initialMs;
    let needList = true;
    let expiredInARow = 0;
    while (!this.stopped) {
      try {
        if (needList) {
          // Expiry right after a list means the server lists too old a revision: pause.
          if (expiredInARow > 1) await this.sleep(Math.min(delay, maxMs));
          await this.listAndReplace();
          needList = false;
        }
        const before = this.stats.events + this.stats.bookmarks;
        const started = Date.now();
        const end = await this.watchOnce();
        const progressed = this.stats.events + this.stats.bookmarks > before;
        if (end === 'relist') {
          needList = true;
          expiredInARow = progressed ? 1 : expiredInARow + 1;
          this.stats.relists++;
          continue;
        }
        expiredInARow = 0;
        if (progressed) delay = initialMs;
        else if (Date.now() - started < 1000) {
          // A stream that ends at once with nothing in it: do not hammer the server.
          await this.sleep(delay);
          delay = Math.min(delay * 2, maxMs);
        }
      } catch (e) {
        if (this.stopped) break;
        if (isKubeApiError(e) && e.expired) {
          needList = true;
          expiredInARow++;
          this.stats.relists++;
          continue;
        }
        this.stats.failures++;
        this.report(e);
        await this.sleep(delay);
        delay = Math.min(delay * 2, maxMs);
      }
    }
  }

  private async listAndReplace(): Promise<void> {
    const { labelSelector, fieldSelector } = this.options;
    const pageSize = this.options.pageSize ?? 500;
    const base = {
      ...(labelSelector ? { labelSelector } : {}),
      ...(fieldSelector ? { fieldSelector } : {}),
      signal: this.abort.signal,
    };
    this.stats.lists++;
    const list =
      pageSize > 0
        ? await this.client.listAll({ ...base, pageSize })
        : await this.client.list(base);
    if (this.stopped) return;
    this.replace(list.items, list.metadata.resourceVersion);
  }

  /** Makes the cache equal to a list, dispatching the difference. */
  private replace(items: T[], resourceVersion: string | undefined): void {
    const seen = new Set<string>();
    for (const obj of items) {
      seen.add(objectKey(obj));
      const old = this.cache.upsert(obj);
      if (!old) this.dispatch((h) => h.onAdd?.(obj));
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
        this.dispatch((h) => h.onUpdate?.(old, obj));
      }
    }
    for (const key of this.cache.keys()) {
      if (seen.has(key)) continue;
      const old = this.cache.remove(key) as T;
      this.dispatch((h) => h.onDelete?.(old));
    }
    this.resourceVersion = resourceVersion;
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w.resolve();
    }
  }

  private async watchOnce(): Promise<WatchEnd> {
    const { labelSelector, fieldSelector } = this.options;
    const timeoutSeconds =
      this.options.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
    this.stats.watches++;
    const stream = await this.client.watch({
      ...(this.resourceVersion !== undefined ? { resourceVersion: this.resourceVersion } : {}),
      allowWatchBookmarks: this.options.bookmarks ?? true,
      timeoutSeconds,
      ...(labelSelector ? { labelSelector } : {}),
      ...(fieldSelector ? { fieldSelector } : {}),
      signal: this.abort.signal,
      idleTimeoutMs: this.options.watchIdleTimeoutMs ?? 90_000,
    });
    try {
      for await (const ev of stream) {
        if (this.stopped) return 'ended';
        if (ev.type === 'ERROR') {
          // 410 (history compacted past the resume point) or anything else: start over.
          this.report(new KubeApiError(ev.object.code ?? 500, ev.object));
          return 'relist';
        }
        this.handle(ev);
        const rv = ev.object.metadata.resourceVersion;
        if (rv) this.resourceVersion = rv;
      }
      return 'ended';
    } finally {
      stream.close();
    }
  }

  private handle(ev: Exclude<WatchEvent<T>, { type: 'ERROR' }>): void {
    if (ev.type === 'BOOKMARK') {
      this.stats.bookmarks++;
      return;
    }
    this.stats.events++;
    const obj = ev.object as T;
    if (ev.type === 'DELETED') {
      const old = this.cache.remove(objectKey(obj));
      if (old) this.dispatch((h) => h.onDelete?.(obj));
      return;
    }
    const old = this.cache.upsert(obj);
    if (!old) this.dispatch((h) => h.onAdd?.(obj));
    else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
      this.dispatch((h) => h.onUpdate?.(old, obj));
    }
  }

  private resync(): void {
    if (!this.synced || this.stopped) return;
    for (const obj of this.cache.list()) this.dispatch((h) => h.onUpdate?.(obj, obj));
  }

  /** Handlers run synchronously; one that throws is reported and does not stop the others. */
  private dispatch(call: (h: InformerHandlers<T>) => void): void {
    for (const h of this.handlers) {
      try {
        call(h);
      } catch (e) {
        this.report(e);
      }
    }
  }

  private report(e: unknown): void {
    try {
      this.options.onError?.(e);
    } catch {
      // An error reporter that fails has nowhere to report to.
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeSleep = done;
      if (this.stopped) done();
    });
  }
}
