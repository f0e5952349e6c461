/**
 * Selecting objects from the decoded cache: by an index when the filter pins an indexed
 * field, by namespace prefix when it names a namespace, else over the whole resource. Always
 * in key order, optionally after a key (continue tokens).
 */
import type { ObjectFilter } from '../../../k8s/filter.js';
import { collectionPrefix, objectKey } from '../../../k8s/keys.js';
import type { ResourceInfo } from '../../../k8s/types.js';
import type { CachedObject, ResourceCache } from './cache.js';

export function* selectObjects(
  cache: ResourceCache | undefined,
  info: ResourceInfo,
  filter: ObjectFilter,
  after?: string,
): Generator<[string, CachedObject]> {
  if (!cache) return;
  const hint = filter.hint;
  if (
    hint?.field === 'metadata.name' &&
    (filter.namespace !== undefined || info.scope === 'Cluster')
  ) {
    const key = objectKey(info, filter.namespace ?? '', hint.value);
    const entry = cache.get(key);
    if (entry && (after === undefined || key > after) && filter.matches(entry.obj)) {
      yield [key, entry];
    }
    return;
  }
  if (hint && cache.isIndexed(hint.field)) {
    for (const key of cache.keysByField(hint.field, hint.value)) {
      if (after !== undefined && key <= after) continue;
      const entry = cache.get(key);
      if (entry && filter.matches(entry.obj)) yield [key, entry];
    }
    return;
  }
  const prefix = collectionPrefix(info, info.scope === 'Namespaced' ? filter.namespace : undefined);
  for (const [key, entry] of cache.scan(prefix, after)) {
    if (filter.selectsAll || filter.matches(entry.obj)) yield [key, entry];
  }
}
