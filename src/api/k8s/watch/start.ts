/**
 * Starting a Kubernetes watch, independent of the transport (HTTP chunked stream or
 * websocket):
 *
 *   resourceVersion "" or "0" (sendInitialEvents unset or true): a synthetic ADDED for every
 *     object that matches now, then live events;
 *   resourceVersion N: every matching change after N, no synthetic events;
 *   sendInitialEvents=true: the initial ADDEDs end with a BOOKMARK annotated
 *     k8s.io/initial-events-end, at the revision they describe;
 *   N older than the history kept: one ERROR event (410 Expired), then a clean end.
 *
 * The synthetic events come from the face's object cache at its revision R0 and the watch
 * cache's watcher starts at R0 + 1 in the same turn, so they fit with no gap. Everything after
 * that is the watch cache's: catch-up from its window or else the store's history, the live
 * stream, progress, and the slow-watcher policy. The watcher's key range is the collection (or
 * the one object a metadata.name selects); an equality on an indexed field (spec.nodeName)
 * puts it in the cache's field index, so it is offered only its own value's events.
 */

import { collectionPrefix, objectKey } from '../../../k8s/keys.js';
import type { Cacher, FieldSelection } from '../../../watchcache/index.js';
import { bookmarkLine, objectLine } from './encode.js';
import { indexedField } from './encoder.js';
import { refOf } from './events.js';
import type { KubeHub } from './hub.js';
import { selectObjects } from './select.js';
import type { KubeWatch, WatchFrom, WatchSettings, WatchSink } from './watch.js';

export interface WatchStart extends WatchSettings {
  /** Send the current state first (synthetic ADDED), or replay after `afterRevision`. */
  initialEvents: boolean;
  /** With initialEvents: end them with the initial-events-end bookmark. */
  initialEventsBookmark: boolean;
  /** Without initialEvents: deliver changes with revision > this (the request's N). */
  afterRevision: number;
}

export function startWatch(
  hub: KubeHub,
  cacher: Cacher,
  s: WatchStart,
  sink: WatchSink,
  now: () => number,
): KubeWatch {
  const w = hub.watchers.open(cacher, s, sink, now);
  let startRevision = s.afterRevision + 1;
  if (s.initialEvents) {
    const r0 = hub.revision;
    writeInitial(hub, w, s, now());
    if (s.initialEventsBookmark) w.writeNow(bookmarkLine(s.info, r0, true));
    startRevision = r0 + 1;
  }
  w.follow({ ...watchRange(s), startRevision });
  return w;
}

/** The cache watcher's range and field selection for a watch's filter. */
function watchRange(s: WatchStart): Omit<WatchFrom, 'startRevision'> {
  const { info, filter } = s;
  const namespace = info.scope === 'Namespaced' ? filter.namespace : undefined;
  const hint = filter.hint;
  if (hint?.field === 'metadata.name' && (namespace !== undefined || info.scope === 'Cluster')) {
    return { key: objectKey(info, namespace ?? '', hint.value), prefix: false, field: undefined };
  }
  const f = hint ? indexedField(info, hint.field) : undefined;
  const field: FieldSelection | undefined = f && hint ? { field: f, value: hint.value } : undefined;
  return { key: collectionPrefix(info, namespace), prefix: true, field };
}

function writeInitial(hub: KubeHub, w: KubeWatch, s: WatchStart, nowMs: number): void {
  const cache = hub.cacheFor(refOf(s.info), s.info.group);
  const isTable = s.format.kind === 'table';
  for (const [, entry] of selectObjects(cache, s.info, s.filter)) {
    w.writeNow(objectLine('ADDED', entry, s.info, s.format, !w.columnsSent, nowMs));
    if (isTable) w.markColumnsSent();
  }
}
