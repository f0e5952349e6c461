/**
 * Starting a Kubernetes watch, independent of the
 * transport (HTTP chunked stream or websocket):
 *
 *   resourceVersion "" or "0" (sendInitialEvents unset or true): a synthetic ADDED for every
 *     object that matches now, then live events;
 *   resourceVersion N: every matching change after N, no synthetic events;
 *   sendInitialEvents=true: the initial ADDEDs end with a BOOKMARK annotated
 *     k8s.io/initial-events-end, at the revision they describe;
 *   N older than the history kept: one ERROR event (410 Expired), then a clean end.
 *
 * The watcher is registered and the snapshot (or the window's replay) taken in the same
 * turn, so the snapshot at revision R0 and the live events after R0 fit with no gap.
 */

import type { ObjectFilter } from '../../../k8s/filter.js';
import { bytesKey, collectionPrefix, parseKey } from '../../../k8s/keys.js';
import { expired } from '../../../k8s/status.js';
import type { ResourceInfo } from '../../../k8s/types.js';
import type { EventBatch } from '../../../store/types.js';
import type { Cacher } from '../../../watchcache/index.js';
import { errorLine, objectLine, type WatchFormat } from './encode.js';
import type { KubeEvent } from './events.js';
import { decodeValue, type KubeHub, refOf } from './hub.js';
import { selectObjects } from './select.js';
import { KubeWatcher, type WatchSink } from './watcher.js';

export interface WatchStart {
  info: ResourceInfo;
  filter: ObjectFilter;
  format: WatchFormat;
  /** Send the current state first (synthetic ADDED), or replay after `afterRevision`. */
  initialEvents: boolean;
  /** With initialEvents: end them with the initial-events-end bookmark. */
  initialEventsBookmark: boolean;
  /** Without initialEvents: deliver changes with revision > this (the request's N). */
  afterRevision: number;
  bookmarks: boolean;
  deadlineMs: number;
  maxBufferedBytes: number;
}

export function startWatch(
  hub: KubeHub,
  cacher: Cacher,
  s: WatchStart,
  sink: WatchSink,
  now: () => number,
): KubeWatcher {
  const w = new KubeWatcher(
    s.info,
    s.filter,
    s.format,
    sink,
    { bookmarks: s.bookmarks, maxBufferedBytes: s.maxBufferedBytes, deadlineMs: s.deadlineMs },
    now,
  );
  hub.watchers.add(w);
  const r0 = hub.revision;
  if (s.initialEvents) {
    writeInitial(hub, w, s, now());
    if (s.initialEventsBookmark) w.bookmark(r0, true);
    w.goLive(r0);
    return w;
  }
  const ref = refOf(s.info);
  const recent = hub.window.after(s.afterRevision);
  if (recent) {
    for (const e of recent) if (e.ref === ref) w.deliver(e);
    w.goLive(r0);
    return w;
  }
  replayFromCache(cacher, w, s, r0);
  return w;
}

function writeInitial(hub: KubeHub, w: KubeWatcher, s: WatchStart, nowMs: number): void {
  const cache = hub.cacheFor(refOf(s.info), s.info.group);
  for (const [, entry] of selectObjects(cache, s.info, s.filter)) {
    const isTable = s.format.kind === 'table';
    w.writeLine(objectLine('ADDED', entry, s.info, s.format, !w.tableColumnsSent, nowMs), isTable);
  }
}

/** Decodes one batch of the store's history into events of one resource. */
function decodeBatch(batch: Pick<EventBatch, 'revision' | 'events'>, ref: string): KubeEvent[] {
  const out: KubeEvent[] = [];
  for (const ev of batch.events) {
    const key = bytesKey(ev.kv.key);
    const parts = parseKey(key);
    if (!parts || refOf(parts) !== ref) continue;
    const obj = ev.type === 'PUT' ? decodeValue(ev.kv.value, batch.revision) : undefined;
    const old = ev.prevKv ? decodeValue(ev.prevKv.value, ev.prevKv.modRevision) : undefined;
    if (!obj && !old) continue;
    out.push({
      revision: batch.revision,
      ref,
      key,
      namespace: parts.namespace,
      name: parts.name,
      obj,
      old,
      lines: new Map(),
    });
  }
  return out;
}

/**
 * Replays (N, r0] through a watcher of the watch cache (its window, or the store's history
 * behind it), then lets the queued live events through. The cache watcher is dropped once it
 * has covered r0; progress requests tell when that is if no event of ours comes after r0.
 */
function replayFromCache(cacher: Cacher, w: KubeWatcher, s: WatchStart, r0: number): void {
  const ref = refOf(s.info);
  if (s.afterRevision >= r0) {
    w.goLive(r0);
    return;
  }
  const prefix = collectionPrefix(
    s.info,
    s.info.scope === 'Namespaced' ? s.filter.namespace : undefined,
  );
  let done = false;
  let poll: NodeJS.Timeout | undefined;
  const finish = (live: boolean) => {
    if (done) return;
    done = true;
    if (poll) clearInterval(poll);
    sub.cancel();
    if (live) w.goLive(r0);
  };
  const sub = cacher.watch(
    { key: prefix, prefix: true, startRevision: s.afterRevision + 1, prevKv: true },
    (resp) => {
      if (done) return;
      if (w.state === 'closed') return finish(false);
      if (resp.type === 'events') {
        if (resp.revision > r0) return finish(true);
        for (const e of decodeBatch(resp, ref)) w.deliver(e);
        if (resp.revision === r0) finish(true);
        return;
      }
      if (resp.type === 'progress') {
        if (resp.revision >= r0) finish(true);
        return;
      }
      const c = resp.cancellation;
      finish(false);
      if (c.reason === 'COMPACTED') {
        const oldest = Math.max(0, c.compactRevision - 1);
        w.writeLine(
          errorLine(expired(`too old resource version: ${s.afterRevision} (${oldest})`).status),
        );
      }
      w.close();
    },
  );
  poll = setInterval(() => {
    if (!done) sub.requestProgress();
  }, 5);
  poll.unref();
  sub.requestProgress();
}
