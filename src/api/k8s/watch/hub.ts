/**
 * The Kubernetes face's view of the member's data: the decoded objects of every resource
 * (lists, gets and the initial events of watches are served from here), kept at the watch
 * cache's revision by one watcher of the watch cache (src/watchcache) on /registry/. Its
 * encoder takes the decoded events that the entry's other Kubernetes readers share (events.ts),
 * so an event is parsed once for the object cache and every Kubernetes watcher together. The
 * watches themselves are watchers of the watch cache too (start.ts, watch.ts); the hub only
 * keeps the set of them.
 *
 * Consistency: `revision` is the last revision applied to the decoded caches. Everything the
 * hub exposes is the state at exactly that revision, and it only moves inside `applyBatch`,
 * which runs synchronously. So a caller that reads the caches and starts a watcher at the next
 * revision in the same turn sees a state and an event stream that fit together with no gap.
 */

import {
  bytesKey,
  keyBytes,
  parseKey,
  prefixEndBytes,
  REGISTRY_PREFIX,
} from '../../../k8s/keys.js';
import type { KindRegistry } from '../../../k8s/registry.js';
import type { KubeObject } from '../../../k8s/types.js';
import type { KeyValue, WatchableStore } from '../../../store/types.js';
import type {
  Cacher,
  Cancellation,
  EventView,
  FrameEncoder,
  Watcher,
  WindowEntry,
} from '../../../watchcache/index.js';
import { type CachedObject, ResourceCache } from './cache.js';
import { decodeValue, type KubeEvent, kubeEventAt, refOf } from './events.js';
import { KubeWatches } from './watch.js';

export { decodeValue, refOf } from './events.js';

type Waiter = { revision: number; resolve: () => void };

/** What the hub's own watcher of the cache receives. */
type HubFrame =
  | {
      readonly kind: 'events';
      readonly revision: number;
      readonly events: readonly KubeEvent[];
      readonly bytes: number;
    }
  | { readonly kind: 'progress' }
  | { readonly kind: 'canceled'; readonly cancellation: Cancellation };

/** The decoded events of a revision, shared with every other Kubernetes reader of the entry. */
const hubEncoder: FrameEncoder<HubFrame> = {
  eventFrames(entry: WindowEntry, view: EventView): readonly HubFrame[] {
    const n = view.indices === null ? entry.batch.events.length : view.indices.length;
    const events: KubeEvent[] = [];
    let bytes = 0;
    for (let j = 0; j < n; j++) {
      const i = view.indices === null ? j : view.indices[j]!;
      const e = kubeEventAt(entry, i);
      if (e === null) continue;
      events.push(e);
      const ev = entry.batch.events[i]!;
      bytes += ev.kv.value.length + (ev.prevKv?.value.length ?? 0);
    }
    if (events.length === 0) return [];
    return [{ kind: 'events', revision: entry.batch.revision, events, bytes }];
  },
  progressFrame: () => ({ kind: 'progress' }),
  canceledFrame: (cancellation) => ({ kind: 'canceled', cancellation }),
  frameBytes: (f) => 64 + (f.kind === 'events' ? f.bytes : 0),
};

export class KubeHub {
  private readonly caches = new Map<string, ResourceCache>();
  /** Every open Kubernetes watch (for the ticker and for closing them). */
  readonly watchers = new KubeWatches();
  private rev = 0;
  private loaded = false;
  private stopped = false;
  private loading: Promise<void> | undefined;
  private waiters: Waiter[] = [];
  private readonly batchListeners = new Set<(events: readonly KubeEvent[]) => void>();
  private follower: Watcher<HubFrame> | undefined;
  private unsubscribeReset: (() => void) | undefined;

  constructor(
    private readonly source: WatchableStore,
    private readonly cacherOf: () => Cacher,
    private readonly registry: KindRegistry,
  ) {}

  /** The revision the caches are at. */
  get revision(): number {
    return this.rev;
  }

  /** Loads the current objects, then follows the watch cache from the next revision. */
  async start(): Promise<void> {
    this.unsubscribeReset ??= this.source.onReset(() => void this.reload());
    await this.reload();
  }

  stop(): void {
    this.stopped = true;
    this.unfollow();
    this.unsubscribeReset?.();
    this.watchers.closeAll();
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }

  /**
   * (Re)loads everything under /registry/ and follows the cache from there. Watchers end
   * first (their clients resume from the last resourceVersion they saw, or re-list).
   */
  reload(): Promise<void> {
    if (!this.loading) {
      this.loading = this.load().finally(() => {
        this.loading = undefined;
      });
    }
    return this.loading;
  }

  private async load(): Promise<void> {
    this.loaded = false;
    this.unfollow();
    this.watchers.closeAll();
    const r = await this.source.range({
      key: keyBytes(REGISTRY_PREFIX),
      rangeEnd: prefixEndBytes(REGISTRY_PREFIX),
    });
    if (this.stopped) return;
    this.caches.clear();
    for (const kv of r.kvs) this.loadKv(kv);
    this.rev = r.revision;
    this.loaded = true;
    this.follow(r.revision + 1);
    this.wake();
  }

  /** Follows the watch cache from `from` (inclusive), one turn after frames are queued. */
  private follow(from: number): void {
    const cacher = this.cacherOf();
    const w = cacher.addWatcher(
      { key: REGISTRY_PREFIX, prefix: true, startRevision: from, prevKv: true },
      hubEncoder,
    );
    this.follower = w;
    let scheduled = false;
    const drain = () => {
      scheduled = false;
      if (this.follower !== w) return;
      for (const f of cacher.take(w, Number.POSITIVE_INFINITY).frames) this.onFrame(f);
    };
    w.onReadable = () => {
      if (scheduled) return;
      scheduled = true;
      cacher.options.scheduler(drain);
    };
    if (w.queuedFrames > 0) w.onReadable();
  }

  private unfollow(): void {
    const w = this.follower;
    if (w === undefined) return;
    this.follower = undefined;
    w.onReadable = null;
    this.cacherOf().cancel(w);
  }

  private onFrame(f: HubFrame): void {
    if (this.stopped || this.follower === undefined) return;
    if (f.kind === 'events') {
      if (f.revision <= this.rev) return;
      this.applyBatch(f.revision, f.events);
      this.wake();
      return;
    }
    if (f.kind !== 'canceled') return;
    const c = f.cancellation;
    this.follower = undefined;
    // Fell behind or failed: resume exactly where we are. Anything else: start over.
    if (c.reason === 'SLOW' || c.reason === 'FAILED') this.follow(this.rev + 1);
    else if (c.reason === 'COMPACTED') void this.reload();
  }

  private loadKv(kv: KeyValue): void {
    const key = bytesKey(kv.key);
    const parts = parseKey(key);
    if (!parts) return;
    const entry = decodeValue(kv.value, kv.modRevision);
    if (entry) this.cacheFor(refOf(parts), parts.group).set(key, entry);
  }

  /** The cache of one resource (all versions), created on first use. */
  cacheFor(ref: string, group?: string): ResourceCache {
    let c = this.caches.get(ref);
    if (!c) {
      const [g = group ?? '', resource = ''] = ref.split('/');
      const info = this.registry.all().find((i) => i.group === g && i.resource === resource);
      const indexed = new Map<string, (o: KubeObject) => string>();
      for (const f of info?.indexedFields ?? []) {
        const get = info?.fields[f];
        if (get) indexed.set(f, get);
      }
      c = new ResourceCache(indexed);
      this.caches.set(ref, c);
    }
    return c;
  }

  /** Applies one revision: caches, then listeners. Synchronous by contract. */
  private applyBatch(revision: number, events: readonly KubeEvent[]): void {
    for (const e of events) {
      const cache = this.cacheFor(e.ref);
      if (e.obj) cache.set(e.key, e.obj);
      else cache.delete(e.key);
    }
    this.rev = revision;
    if (events.length > 0) for (const l of this.batchListeners) l(events);
  }

  /** Calls `listener` with the decoded events of every revision applied from now on. */
  onEvents(listener: (events: readonly KubeEvent[]) => void): () => void {
    this.batchListeners.add(listener);
    return () => this.batchListeners.delete(listener);
  }

  /**
   * Resolves once the caches reach `revision` (true), or after `timeoutMs` (false). The
   * consistent-read path: ask the member for its current revision, then wait for it here.
   */
  waitFresh(revision: number, timeoutMs: number): Promise<boolean> {
    if (this.loaded && this.rev >= revision) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      timer.unref();
      const waiter: Waiter = {
        revision,
        resolve: () => {
          clearTimeout(timer);
          resolve(this.rev >= revision);
        },
      };
      this.waiters.push(waiter);
    });
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => w.revision <= this.rev);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.revision > this.rev);
    for (const w of ready) w.resolve();
  }

  /** The `group/resource` of every resource with objects seen so far. */
  refs(): string[] {
    return [...this.caches.keys()];
  }

  /** The current object at `key`, from the cache. */
  get(ref: string, key: string): CachedObject | undefined {
    return this.caches.get(ref)?.get(key);
  }
}
