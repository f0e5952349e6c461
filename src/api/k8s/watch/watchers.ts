/**
 * The index of Kubernetes watchers. Each watcher sits in exactly one bucket of its resource:
 *
 *   byField[field][value]  it selects one value of metadata.name or of an indexed field
 *                          (spec.nodeName=n1): only events whose old or new object has that
 *                          value reach it;
 *   byNamespace[ns]        it watches one namespace: only that namespace's events reach it;
 *   all                    everything else.
 *
 * So an event is offered to `all`, its namespace's bucket and the buckets of its field values,
 * never to the watchers of other namespaces or nodes. The full filter (labels and every
 * field term) then decides, once per candidate.
 */
import type { ResourceCache } from './cache.js';
import type { KubeEvent } from './events.js';
import { type KubeWatcher, WatcherState } from './watcher.js';

type Bucket = Set<KubeWatcher>;

interface ResourceWatchers {
  all: Bucket;
  byNamespace: Map<string, Bucket>;
  byField: Map<string, Map<string, Bucket>>;
}

export const refOfInfo = (i: { group: string; resource: string }): string =>
  `${i.group}/${i.resource}`;

function addTo<K>(map: Map<K, Bucket>, key: K, w: KubeWatcher): void {
  let b = map.get(key);
  if (!b) map.set(key, (b = new Set()));
  b.add(w);
}

function removeFrom<K>(map: Map<K, Bucket>, key: K, w: KubeWatcher): void {
  const b = map.get(key);
  if (!b) return;
  b.delete(w);
  if (b.size === 0) map.delete(key);
}

export class WatcherIndex {
  private readonly byRef = new Map<string, ResourceWatchers>();
  private readonly everyone = new Set<KubeWatcher>();

  get size(): number {
    return this.everyone.size;
  }

  /** Every watcher (for the keepalive/bookmark/deadline ticker). */
  values(): IterableIterator<KubeWatcher> {
    return this.everyone.values();
  }

  add(w: KubeWatcher): void {
    const ref = refOfInfo(w.info);
    let rw = this.byRef.get(ref);
    if (!rw) {
      rw = { all: new Set(), byNamespace: new Map(), byField: new Map() };
      this.byRef.set(ref, rw);
    }
    const { hint, namespace } = w.filter;
    if (hint) {
      let values = rw.byField.get(hint.field);
      if (!values) rw.byField.set(hint.field, (values = new Map()));
      addTo(values, hint.value, w);
    } else if (namespace !== undefined) addTo(rw.byNamespace, namespace, w);
    else rw.all.add(w);
    this.everyone.add(w);
    w.onClosed = (x) => this.remove(x);
  }

  remove(w: KubeWatcher): void {
    if (!this.everyone.delete(w)) return;
    const ref = refOfInfo(w.info);
    const rw = this.byRef.get(ref);
    if (!rw) return;
    const { hint, namespace } = w.filter;
    if (hint) {
      const values = rw.byField.get(hint.field);
      if (values) {
        removeFrom(values, hint.value, w);
        if (values.size === 0) rw.byField.delete(hint.field);
      }
    } else if (namespace !== undefined) removeFrom(rw.byNamespace, namespace, w);
    else rw.all.delete(w);
  }

  /** Offers one event to the watchers it may concern. */
  dispatch(e: KubeEvent, cache: ResourceCache | undefined): void {
    const rw = this.byRef.get(e.ref);
    if (!rw) return;
    for (const w of rw.all) w.offer(e);
    if (e.namespace !== '') {
      const b = rw.byNamespace.get(e.namespace);
      if (b) for (const w of b) w.offer(e);
    }
    if (rw.byField.size === 0) return;
    const byName = rw.byField.get('metadata.name')?.get(e.name);
    if (byName) for (const w of byName) w.offer(e);
    if (!cache) return;
    const newValues = e.obj ? cache.indexedValues(e.obj.obj) : [];
    const oldValues = e.old ? cache.indexedValues(e.old.obj) : [];
    for (const [field, value] of newValues) {
      const b = rw.byField.get(field)?.get(value);
      if (b) for (const w of b) w.offer(e);
    }
    for (const [field, value] of oldValues) {
      // A watcher in the bucket of the new value already had the event.
      if (newValues.some(([f, v]) => f === field && v === value)) continue;
      const b = rw.byField.get(field)?.get(value);
      if (b) for (const w of b) w.offer(e);
    }
  }

  /** Ends every watcher cleanly (server stopping, store replaced). */
  closeAll(): void {
    for (const w of [...this.everyone]) w.close();
  }

  /**
   * Periodic duties, run by the hub's ticker: end watchers past their deadline, send
   * bookmarks to live watchers that asked for them, and a newline to quiet streams so that
   * clients with idle timeouts keep them.
   */
  tick(
    nowMs: number,
    revision: number,
    o: { keepaliveMs: number; bookmarkIntervalMs: number },
  ): void {
    for (const w of [...this.everyone]) {
      if (nowMs >= w.options.deadlineMs) {
        w.close();
        continue;
      }
      if (w.state !== WatcherState.live) continue;
      if (w.options.bookmarks && nowMs - w.lastBookmarkMs >= o.bookmarkIntervalMs) {
        w.bookmark(revision);
      } else if (nowMs - w.lastWriteMs >= o.keepaliveMs) w.keepalive();
    }
  }
}
