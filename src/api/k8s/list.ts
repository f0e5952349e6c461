/**
 * list, by the resourceVersion the client asks for:
 *
 *   resourceVersion ""   consistent: the member's current revision through a linearizable
 *                        read, then the cache once it has reached it;
 *   resourceVersion "0"  any: the cache as it is;
 *   N (NotOlderThan)     the cache once it is at N or later (504 if it does not get there);
 *   N + Exact            the store at exactly N (410 when compacted);
 *   continue             the store at the token's revision, after its key (410 when
 *                        compacted); served from the cache while the cache is still there.
 *
 * The list's resourceVersion is the revision it was read at, so a watch from it continues
 * exactly where the list ended.
 */

import { compileFilter, type ObjectFilter } from '../../k8s/filter.js';
import { collectionPrefix, prefixEndBytes } from '../../k8s/keys.js';
import { badRequest, expired, toStatusError } from '../../k8s/status.js';
import { parseIncludeObject, tableJson, tableRow, wantsTable } from '../../k8s/table.js';
import { apiVersionOf, type ResourceInfo } from '../../k8s/types.js';
import type { Kube, ResourceRequest } from './context.js';
import {
  type ContinueToken,
  encodeContinue,
  type ListOptions,
  tooLargeResourceVersion,
} from './list-options.js';
import { sendText } from './respond.js';
import { CachedObject } from './watch/cache.js';
import { refOf } from './watch/hub.js';
import { selectObjects } from './watch/select.js';

export interface ListPage {
  /** Entries in key order. */
  items: Array<[string, CachedObject]>;
  revision: number;
  /** Set when more items may follow. */
  next: ContinueToken | undefined;
}

/** A page from the cache (at its current revision), after `after`. */
export function listFromCache(
  kube: Kube,
  info: ResourceInfo,
  filter: ObjectFilter,
  limit: number,
  after: string | undefined,
): ListPage {
  const revision = kube.hub.revision;
  const cache = kube.hub.cacheFor(refOf(info), info.group);
  const items: Array<[string, CachedObject]> = [];
  for (const pair of selectObjects(cache, info, filter, after)) {
    if (limit > 0 && items.length === limit) {
      const last = items[items.length - 1] as [string, CachedObject];
      return { items, revision, next: { rv: revision, start: last[0] } };
    }
    items.push(pair);
  }
  return { items, revision, next: undefined };
}

/** A page from the store at exactly `revision`, after `after`, filtered. */
export async function listFromStore(
  kube: Kube,
  info: ResourceInfo,
  filter: ObjectFilter,
  limit: number,
  after: string | undefined,
  revision: number,
): Promise<ListPage> {
  const prefix = collectionPrefix(info, info.scope === 'Namespaced' ? filter.namespace : undefined);
  const end = prefixEndBytes(prefix);
  const items: Array<[string, CachedObject]> = [];
  let cursor = after;
  let at = revision;
  const chunk = limit > 0 ? Math.min(Math.max(limit * 2, 100), 5000) : 5000;
  for (;;) {
    const page = await kube.storage.range(prefix, cursor, end, at, chunk);
    // The store answers with its current revision; a read at a given one stays at it.
    if (at === 0) at = page.revision;
    for (const s of page.items) {
      const key = new TextDecoder().decode(s.kv.key);
      cursor = key;
      if (!filter.matches(s.obj)) continue;
      if (limit > 0 && items.length === limit) {
        const last = items[items.length - 1] as [string, CachedObject];
        return { items, revision: at, next: { rv: at, start: last[0] } };
      }
      items.push([key, new CachedObject(s.obj, s.modRevision)]);
    }
    if (!page.more) return { items, revision: at, next: undefined };
  }
}

async function listStoreMapped(
  kube: Kube,
  info: ResourceInfo,
  filter: ObjectFilter,
  o: ListOptions,
  after: string | undefined,
  revision: number,
  isContinue: boolean,
): Promise<ListPage> {
  try {
    return await listFromStore(kube, info, filter, o.limit, after, revision);
  } catch (e) {
    const se = toStatusError(e);
    if (se.status.reason !== 'Expired') throw se;
    throw expired(
      isContinue
        ? 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue value from the response to the final list request.'
        : `The resourceVersion for the provided list is too old.`,
    );
  }
}

/** Resolves the page a list request asks for. */
export async function resolveList(
  kube: Kube,
  info: ResourceInfo,
  filter: ObjectFilter,
  o: ListOptions,
): Promise<ListPage> {
  const t = o.continueToken;
  if (t) {
    const prefix = collectionPrefix(
      info,
      info.scope === 'Namespaced' ? filter.namespace : undefined,
    );
    if (!t.start.startsWith(prefix))
      throw badRequest('continue key is not valid: it belongs to another list');
    if (t.rv === kube.hub.revision) return listFromCache(kube, info, filter, o.limit, t.start);
    return listStoreMapped(kube, info, filter, o, t.start, t.rv, true);
  }
  if (o.resourceVersionMatch === 'Exact') {
    const n = Number(o.resourceVersion);
    if (n === kube.hub.revision) return listFromCache(kube, info, filter, o.limit, undefined);
    if (n > kube.hub.revision && !(await kube.hub.waitFresh(n, kube.options.freshTimeoutMs))) {
      throw tooLargeResourceVersion();
    }
    return listStoreMapped(kube, info, filter, o, undefined, n, false);
  }
  let min = 0;
  if (o.resourceVersion === '') min = await kube.storage.currentRevision();
  else if (o.resourceVersion !== '0') min = Number(o.resourceVersion);
  if (min > kube.hub.revision && !(await kube.hub.waitFresh(min, kube.options.freshTimeoutMs))) {
    if (o.resourceVersion !== '') throw tooLargeResourceVersion();
    // A consistent list the cache cannot serve in time is read from the store, as Kubernetes does.
    return listStoreMapped(kube, info, filter, o, undefined, min, false);
  }
  return listFromCache(kube, info, filter, o.limit, undefined);
}

/** Serialises a page as a List or (Accept: Table) a Table. */
export function renderList(kube: Kube, rr: ResourceRequest, page: ListPage): string {
  const info = rr.info;
  const meta: { resourceVersion: string; continue?: string } = {
    resourceVersion: String(page.revision),
  };
  if (page.next) meta.continue = encodeContinue(page.next);
  if (wantsTable(rr.req.headers.accept)) {
    const include = parseIncludeObject(rr.query.get('includeObject'));
    const now = kube.options.now();
    const rows = page.items.map(([, e]) => tableRow(info, e, include, now));
    return tableJson(info, rows, meta);
  }
  const items = page.items.map(([, e]) => e.json(info));
  return `{"kind":"${info.listKind}","apiVersion":"${apiVersionOf(info)}","metadata":${JSON.stringify(meta)},"items":[${items.join(',')}]}`;
}

export async function handleList(kube: Kube, rr: ResourceRequest, o: ListOptions): Promise<void> {
  const filter = compileFilter(rr.info, rr.path.namespace, o.labelSelector, o.fieldSelector);
  const page = await resolveList(kube, rr.info, filter, o);
  sendText(rr.res, 200, renderList(kube, rr, page));
}
