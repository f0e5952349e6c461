/**
 * The Kubernetes face's view of the member's data: it follows every change under /registry/
 * through one in-process watcher of the watch cache (src/watchcache), decodes each object
 * once, keeps the decoded objects (lists are served from here) and a window of recent decoded
 * events (watches from a recent resourceVersion replay from here), and dispatches each event
 * to the Kubernetes watchers it may concern through an index by namespace, name and field
 * value (watchers.ts). The watch cache's own index is by key range, which cannot tell the
 * watchers of spec.nodeName=n1 from those of n2 on /registry/core/pods/: hence this layer.
 *
 * Consistency: `revision` is the last revision applied to the decoded caches. Everything the
 * hub exposes is the state at exactly that revision, and it only moves inside `applyBatch`,
 * which runs synchronously. So a caller that reads the caches and registers a watcher in the
 * same turn sees a state and an event stream that fit together with no gap.
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
import type { EventBatch, KeyValue, WatchableStore } from '../../../store/types.js';
import type { Cacher, WatchResponse, WatchSubscription } from '../../../watchcache/index.js';
import { CachedObject, ResourceCache } from './cache.js';
import { EventWindow, type KubeEvent } from './events.js';
import { WatcherIndex } from './watchers.js';

export interface HubOptions {
  /** Decoded events kept for replay. Default 10,000. */
  windowEvents?: number;
}

const decoder = new TextDecoder();

/** Decodes a stored object; undefined for bytes this face did not write (not an object). */
export function decodeValue(value: Uint8Array, rv: number): CachedObject | undefined {
  let obj: unknown;
  try {
    obj = JSON.parse(decoder.decode(value));
  } catch {
    return undefined;
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return undefined;
  const o = obj as KubeObject;
  if (!o.metadata || typeof o.metadata !== 'object' || Array.isArray(o.metadata)) return undefined;
  o.metadata.resourceVersion = String(rv);
  return new CachedObject(o, rv);
}

export const refOf = (r: { group: string; resource: string }): string => `${r.group}/${r.resource}`;

type Waiter = { revision: number; resolve: () => void };

export class KubeHub {
  private readonly caches = new Map<string, ResourceCache>();
  readonly window: EventWindow;
  readonly watchers: WatcherIndex;
  private rev = 0;
  private loaded = false;
  private stopped = false;
  private loading: Promise<void> | undefined;
  private waiters: Waiter[] = [];
  private readonly batchListeners = new Set<(events: readonly KubeEvent[]) => void>();
  private subscription: WatchSubscription | undefined;
  private unsubscribeReset: (() => void) | undefined;

  constructor(
    private readonly source: WatchableStore,
    private readonly cacherOf: () => Cacher,
    private readonly registry: KindRegistry,
    options: HubOptions = {},
  ) {
    this.window = new EventWindow(options.windowEvents ?? 10_000, 0);
    this.watchers = new WatcherIndex();
  }

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
    this.subscription?.cancel();
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
    this.subscription?.cancel();
    this.subscription = undefined;
    this.watchers.closeAll();
    const r = await this.source.range({
      key: keyBytes(REGISTRY_PREFIX),
      rangeEnd: prefixEndBytes(REGISTRY_PREFIX),
    });
    if (this.stopped) return;
    this.caches.clear();
    for (const kv of r.kvs) this.loadKv(kv);
    this.rev = r.revision;
    this.window.reset(r.revision);
    this.loaded = true;
    this.follow(r.revision + 1);
    this.wake();
  }

  /** Subscribes to the watch cache from `from` (inclusive). */
  private follow(from: number): void {
    this.subscription = this.cacherOf().watch(
      { key: REGISTRY_PREFIX, prefix: true, startRevision: from, prevKv: true },
      (r) => this.onResponse(r),
    );
  }

  private onResponse(r: WatchResponse): void {
    if (this.stopped) return;
    if (r.type === 'events') {
      if (r.revision <= this.rev) return;
      this.applyBatch({ revision: r.revision, events: r.events });
      this.wake();
      return;
    }
    if (r.type !== 'canceled') return;
    const c = r.cancellation;
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

  /** Applies one revision: caches, window, dispatch, listeners. Synchronous by contract. */
  private applyBatch(batch: EventBatch): void {
    const events: KubeEvent[] = [];
    for (const ev of batch.events) {
      const key = bytesKey(ev.kv.key);
      const parts = parseKey(key);
      if (!parts) continue;
      const ref = refOf(parts);
      const cache = this.cacheFor(ref, parts.group);
      const obj = ev.type === 'PUT' ? decodeValue(ev.kv.value, batch.revision) : undefined;
      const old = obj ? cache.set(key, obj) : cache.delete(key);
      if (!obj && !old) continue;
      const e: KubeEvent = {
        revision: batch.revision,
        ref,
        key,
        namespace: parts.namespace,
        name: parts.name,
        obj,
        old,
        lines: new Map(),
      };
      events.push(e);
      this.window.push(e);
    }
    this.rev = batch.revision;
    for (const e of events) this.watchers.dispatch(e, this.caches.get(e.ref));
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
