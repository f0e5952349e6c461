/**
 * What etcd does to the keys found in a range before answering: filter by min/max create and
 * mod revision, sort, truncate to the limit (setting `more`), drop values for keys_only.
 * `count` is the number of keys in the range before filtering, as etcd reports it.
 *
 * When neither sorting nor filters apply, a reader can stop collecting after limit+1 keys
 * (it still counts the rest): `needsAll` says whether it must collect everything.
 */
import type { KeyValue, RangeRequest, SortOrder } from './types.js';

export interface RangeShape {
  order: SortOrder;
  target: NonNullable<RangeRequest['sortTarget']>;
  limit: number;
  needsAll: boolean;
  /** Key-descending without filters: a reverse iterator serves it in order. */
  reverseKeys: boolean;
}

export function rangeShape(r: RangeRequest): RangeShape {
  const target = r.sortTarget ?? 'KEY';
  let order = r.sortOrder ?? 'NONE';
  // The store yields keys in ascending order; any other target defaults to ascending.
  if (target !== 'KEY' && order === 'NONE') order = 'ASCEND';
  const filtered = !!(
    r.minModRevision ||
    r.maxModRevision ||
    r.minCreateRevision ||
    r.maxCreateRevision
  );
  const limit = r.limit && r.limit > 0 ? r.limit : 0;
  const keyOrder = target === 'KEY' && order !== 'DESCEND';
  const reverseKeys = target === 'KEY' && order === 'DESCEND' && !filtered;
  return { order, target, limit, needsAll: filtered || !(keyOrder || reverseKeys), reverseKeys };
}

function passesFilters(kv: KeyValue, r: RangeRequest): boolean {
  if (r.minModRevision && kv.modRevision < r.minModRevision) return false;
  if (r.maxModRevision && kv.modRevision > r.maxModRevision) return false;
  if (r.minCreateRevision && kv.createRevision < r.minCreateRevision) return false;
  if (r.maxCreateRevision && kv.createRevision > r.maxCreateRevision) return false;
  return true;
}

function sortKey(kv: KeyValue, target: RangeShape['target']): number | Uint8Array {
  switch (target) {
    case 'KEY':
      return kv.key;
    case 'VALUE':
      return kv.value;
    case 'VERSION':
      return kv.version;
    case 'CREATE':
      return kv.createRevision;
    case 'MOD':
      return kv.modRevision;
  }
}

function compareBy(target: RangeShape['target']): (a: KeyValue, b: KeyValue) => number {
  return (a, b) => {
    const x = sortKey(a, target);
    const y = sortKey(b, target);
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    return Buffer.compare(x as Uint8Array, y as Uint8Array);
  };
}

/**
 * Applies filters, sort, limit and keys_only to the collected kvs (in key order, or reverse
 * key order when `shape.reverseKeys`). Sorting is stable, so ties stay in key order.
 */
export function shapeKvs(
  kvs: KeyValue[],
  r: RangeRequest,
  shape: RangeShape,
): { kvs: KeyValue[]; more: boolean } {
  let out = kvs.filter((kv) => passesFilters(kv, r));
  if (!shape.reverseKeys && shape.order !== 'NONE') {
    const cmp = compareBy(shape.target);
    out = out.sort(shape.order === 'DESCEND' ? (a, b) => cmp(b, a) : cmp);
  }
  let more = false;
  if (shape.limit > 0 && out.length > shape.limit) {
    out = out.slice(0, shape.limit);
    more = true;
  }
  if (r.keysOnly) out = out.map((kv) => ({ ...kv, value: new Uint8Array(0) }));
  return { kvs: out, more };
}
