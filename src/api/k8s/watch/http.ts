/**
 * `GET <collection>?watch=1` over HTTP, as kube-apiserver answers it: status 200,
 * `Content-Type: application/json`, chunked, headers flushed at once, one event per line.
 * Errors found before the stream starts (bad selectors, a resourceVersion the cache cannot
 * reach) are ordinary Status answers; a too-old resourceVersion is an ERROR event in the
 * stream followed by a clean end. The stream always ends cleanly (terminating chunk).
 */

import { compileFilter } from '../../../k8s/filter.js';
import { parseIncludeObject, wantsTable } from '../../../k8s/table.js';
import type { Kube, ResourceRequest } from '../context.js';
import { type ListOptions, tooLargeResourceVersion } from '../list-options.js';
import type { WatchFormat } from './encode.js';
import { startWatch, type WatchStart } from './start.js';
import type { KubeWatch, WatchSink } from './watch.js';

/** How long an ended stream may wait for a peer that does not read before it is dropped. */
const DROP_UNREAD_AFTER_MS = 30_000;

/** Turns list options into a watch start, waiting for the cache when the request needs it. */
export async function prepareWatch(
  kube: Kube,
  rr: Pick<ResourceRequest, 'info' | 'path' | 'query' | 'req'>,
  o: ListOptions,
): Promise<WatchStart> {
  const filter = compileFilter(rr.info, rr.path.namespace, o.labelSelector, o.fieldSelector);
  const format: WatchFormat = wantsTable(rr.req.headers.accept)
    ? { kind: 'table', includeObject: parseIncludeObject(rr.query.get('includeObject')) }
    : { kind: 'json' };
  const rv = o.resourceVersion;
  const n = rv === '' ? 0 : Number(rv);
  // Initial events: by default for "" and "0"; on request (sendInitialEvents=true) for any.
  const initialEvents = o.sendInitialEvents ?? (rv === '' || rv === '0');
  let minRevision = n;
  if (o.sendInitialEvents === true && rv === '') minRevision = await kube.storage.currentRevision();
  if (minRevision > kube.hub.revision) {
    const ok = await kube.hub.waitFresh(minRevision, kube.options.freshTimeoutMs);
    if (!ok) throw tooLargeResourceVersion();
  }
  const now = kube.options.now();
  const timeoutMs =
    o.timeoutSeconds !== undefined && o.timeoutSeconds > 0
      ? o.timeoutSeconds * 1000
      : kube.options.minWatchTimeoutMs * (1 + Math.random());
  return {
    info: rr.info,
    filter,
    format,
    initialEvents,
    initialEventsBookmark: o.sendInitialEvents === true,
    // sendInitialEvents=false with "" or "0": from now on.
    afterRevision: rv === '' || rv === '0' ? kube.hub.revision : n,
    bookmarks: o.allowWatchBookmarks,
    deadlineMs: now + timeoutMs,
    maxBufferedBytes: kube.options.watchMaxBufferedBytes,
  };
}

export async function handleWatch(
  kube: Kube,
  rr: ResourceRequest,
  o: ListOptions,
): Promise<KubeWatch> {
  const start = await prepareWatch(kube, rr, o);
  const { res } = rr;
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, private',
    'Transfer-Encoding': 'chunked',
  });
  res.flushHeaders();
  let ended = false;
  const sink: WatchSink = {
    write: (text) => {
      if (!ended) res.write(text);
    },
    bufferedBytes: () => res.writableLength,
    onceDrain: (listener) => {
      res.once('drain', listener);
    },
    end: () => {
      if (ended) return;
      ended = true;
      res.end();
      // A peer that never reads would hold the socket (and what is queued on it) forever:
      // once the clean end has had time to get through, drop the connection.
      if (!res.writableFinished) {
        const t = setTimeout(() => res.destroy(), DROP_UNREAD_AFTER_MS);
        t.unref();
        res.once('finish', () => clearTimeout(t));
        res.once('close', () => clearTimeout(t));
      }
    },
  };
  const w = startWatch(kube.hub, kube.cacher, start, sink, kube.options.now);
  // The client went away: forget the watcher (ending the response is then a no-op).
  res.on('close', () => w.close());
  return w;
}
