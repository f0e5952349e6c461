/**
 * Strategic merge patch, applied as kube-apiserver applies it to built-in kinds
 * (apimachinery's strategicpatch with MergeParallelList and IgnoreUnmatchedNulls).
 *
 * Rules, per field, using the kind's merge schema (merge-schema.ts):
 * - maps merge key by key; `null` deletes; a map with `$patch: replace` replaces, with
 *   `$patch: delete` is removed; `$retainKeys: [...]` keeps only the listed keys;
 * - lists without a strategy are replaced; keyed lists merge element by element on the
 *   merge key (`{"$patch": "delete", key: v}` removes one, a `{"$patch": "replace"}` element
 *   replaces the whole list); scalar lists with a strategy are sets (union), with
 *   `$deleteFromPrimitiveList/<list>` removing values;
 * - `$setElementOrder/<list>` orders the merged list; without it, merged lists take the
 *   patch's order with server-only elements placed where they were relative to them;
 * - every `$` directive is consumed: the result holds none.
 *
 * Format errors Kubernetes answers with 400 are BadRequest; everything else that cannot
 * apply is a 422 (Kubernetes answers some of those with a 500 we do not imitate).
 */
import { badRequest, type KubeLibError, unprocessable } from './errors.js';
import { cloneJson, isJsonObject, type JsonMap, type JsonValue } from './json.js';
import {
  type FieldSchema,
  fieldOf,
  itemsOf,
  type ListSchema,
  type MapSchema,
} from './merge-schema.js';

const PATCH = '$patch';
const RETAIN_KEYS = '$retainKeys';
const SET_ORDER = '$setElementOrder';
const DELETE_FROM = '$deleteFromPrimitiveList';

/** Returned by mergeMap for a map carrying `$patch: delete`: its parent drops the key. */
const DELETED = Symbol('deleted');

export type StrategicMergeError = KubeLibError;

/** The per-kind schemas live in smp-schemas.ts; re-exported so callers need one import. */
export { smpSchemaFor } from './smp-schemas.js';

/**
 * Applies `patch` to `original` (neither is modified) using the kind's schema; see
 * smpSchemaFor. A `$patch: delete` at the root yields an empty object, as Kubernetes does.
 */
export function strategicMerge(
  original: object,
  patch: unknown,
  schema: MapSchema | undefined,
): JsonMap {
  if (!isJsonObject(patch)) throw badRequest('invalid JSON document');
  const base = isJsonObject(original) ? cloneJson(original) : {};
  const out = mergeMap(base, cloneJson(patch), schema);
  return out === DELETED ? {} : out;
}

/** `original` is owned (mutated and returned); `patch` is owned too. */
function mergeMap(
  original: JsonMap | undefined,
  patch: JsonMap,
  schema: FieldSchema | undefined,
): JsonMap | typeof DELETED {
  if (Object.hasOwn(patch, PATCH)) {
    const directive = patch[PATCH];
    if (directive === 'replace') {
      delete patch[PATCH];
      return mergeMap(undefined, patch, schema) as JsonMap;
    }
    if (directive === 'delete') return DELETED;
    throw unprocessable(`unknown patch type: ${String(directive)} in map`);
  }
  const out: JsonMap = original ?? {};
  applyRetainKeys(out, patch);
  const ordered = applyElementOrders(out, patch, schema);
  const deletions: [string, JsonValue][] = [];
  for (const key of Object.keys(patch)) {
    if (ordered.has(key)) continue;
    const value = patch[key] as JsonValue;
    if (key.startsWith(DELETE_FROM)) {
      deletions.push([directiveTarget(key, DELETE_FROM), value]);
      continue;
    }
    // Other `$` keys are not fields Kubernetes would keep (typed decoding drops them).
    if (key.startsWith('$')) continue;
    mergeField(out, key, value, fieldOf(schema, key));
  }
  for (const [key, values] of deletions) deleteFromPrimitiveList(out, key, values);
  return out;
}

function mergeField(
  out: JsonMap,
  key: string,
  value: JsonValue,
  schema: FieldSchema | undefined,
): void {
  if (value === null) {
    delete out[key];
    return;
  }
  const current = out[key];
  if (current === undefined || kindOf(current) !== kindOf(value)) {
    const fresh = freshValue(value, schema);
    if (fresh === DELETED) delete out[key];
    else out[key] = fresh;
    return;
  }
  if (isJsonObject(current) && isJsonObject(value)) {
    const merged =
      schema?.type === 'map' && schema.atomic
        ? freshValue(value, schema)
        : mergeMap(current, value, schema);
    if (merged === DELETED) delete out[key];
    else out[key] = merged;
    return;
  }
  if (Array.isArray(current) && Array.isArray(value)) {
    out[key] = isMergeList(schema) ? mergeList(current, value, schema) : value.map(discardNulls);
    return;
  }
  out[key] = value;
}

/** The value a patch sets where the original has nothing (or something of another type). */
function freshValue(value: JsonValue, schema: FieldSchema | undefined): JsonValue | typeof DELETED {
  if (isJsonObject(value)) return mergeMap(undefined, value, schema);
  if (Array.isArray(value)) {
    if (isMergeList(schema)) return mergeList([], value, schema);
    return value.map((v) => discardNulls(v));
  }
  return value;
}

/** Kubernetes drops null fields from values it copies in from a patch. */
function discardNulls(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(discardNulls);
  if (isJsonObject(v)) {
    const out: JsonMap = {};
    for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = discardNulls(x);
    return out;
  }
  return v;
}

function isMergeList(schema: FieldSchema | undefined): schema is ListSchema {
  return schema?.type === 'list' && schema.strategy === 'merge';
}

type Kind = 'map' | 'list' | 'string' | 'number' | 'boolean' | 'null';

function kindOf(v: JsonValue): Kind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'object') return 'map';
  return typeof v as Kind;
}

/** `$setElementOrder/x` → `x`; a directive without a field name is a 400. */
function directiveTarget(key: string, prefix: string): string {
  const slash = key.indexOf('/');
  if (slash < 0 || key.slice(0, slash) !== prefix) {
    throw badRequest(
      prefix === DELETE_FROM
        ? 'invalid patch format of primitive list'
        : 'invalid patch format of setElementOrder list',
    );
  }
  return key.slice(slash + 1);
}

/**
 * `$retainKeys`: every non-null patch field must be listed (else 400), and the original
 * keeps only the listed keys before the merge.
 */
function applyRetainKeys(out: JsonMap, patch: JsonMap): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const list = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(list)) throw badRequest('invalid patch format of retainKeys');
  const keep = new Set(list.filter((k): k is string => typeof k === 'string'));
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || k.startsWith(DELETE_FROM) || k.startsWith(SET_ORDER)) continue;
    if (!keep.has(k)) throw badRequest('invalid patch format of retainKeys');
  }
  for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
}

/**
 * Handles every `$setElementOrder/<list>` of the patch: merges the list (if the patch has
 * it) and orders the result. Returns the keys consumed.
 */
function applyElementOrders(
  out: JsonMap,
  patch: JsonMap,
  schema: FieldSchema | undefined,
): Set<string> {
  const consumed = new Set<string>();
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ORDER)) continue;
    consumed.add(key);
    const order = patch[key];
    if (!Array.isArray(order)) throw unprocessable(`${key} must be a list`);
    const field = directiveTarget(key, SET_ORDER);
    const listSchema = fieldOf(schema, field);
    const mergeKey = listSchema?.type === 'list' ? listSchema.mergeKey : undefined;
    const original = out[field];
    const patchList = patch[field];
    if (original !== undefined && !Array.isArray(original))
      throw unprocessable(`${field} is not a list`);
    if (patchList !== undefined && patchList !== null && !Array.isArray(patchList)) {
      throw unprocessable(`${field} in the patch is not a list`);
    }
    if (Array.isArray(patchList)) checkOrderConsistent(patchList, order, mergeKey);
    let merged: JsonValue[];
    if (Array.isArray(patchList)) {
      const base = Array.isArray(original) ? original : [];
      merged = isMergeList(listSchema)
        ? mergeList(base, patchList, listSchema)
        : patchList.map(discardNulls);
    } else if (Array.isArray(original)) {
      merged = original;
    } else continue;
    if (Array.isArray(patchList)) consumed.add(field);
    const inOrder = merged.filter((item) => indexIn(order, item, mergeKey) >= 0);
    const serverOnly = merged.filter((item) => indexIn(order, item, mergeKey) < 0);
    out[field] = normalizeOrder(inOrder, serverOnly, order, original ?? [], mergeKey);
  }
  return consumed;
}

/** Kubernetes insists the patch list's elements appear in the order directive's order. */
function checkOrderConsistent(
  patchList: JsonValue[],
  order: JsonValue[],
  mergeKey: string | undefined,
): void {
  const items = patchList.filter((p) => !(isJsonObject(p) && Object.hasOwn(p, PATCH)));
  let i = 0;
  for (const o of order) {
    if (i >= items.length) return;
    if (sameElement(items[i] as JsonValue, o, mergeKey)) i++;
  }
  if (i < items.length)
    throw unprocessable('The order in patch list does not match $setElementOrder list');
}

function deleteFromPrimitiveList(out: JsonMap, key: string, values: JsonValue): void {
  const current = out[key];
  if (current === undefined) return;
  if (!Array.isArray(values) || !Array.isArray(current)) {
    throw unprocessable(`${DELETE_FROM}/${key} must be a list applied to a list`);
  }
  out[key] = current.filter((v) => !values.some((d) => d === v));
}

/**
 * Merges a patch list into an original list with a merge strategy: maps by merge key,
 * scalars as a set. Both lists are owned.
 */
function mergeList(original: JsonValue[], patch: JsonValue[], schema: ListSchema): JsonValue[] {
  if (original.length === 0 && patch.length === 0) return original;
  const elementKind = commonKind(original, patch);
  if (elementKind !== 'map') {
    const merged: JsonValue[] = [];
    for (const v of [...original, ...patch]) if (!merged.includes(v)) merged.push(v);
    return orderLikePatch(merged, patch, original, undefined);
  }
  const key = schema.mergeKey;
  if (key === undefined) throw unprocessable('cannot merge lists without merge key');
  let base = original as JsonMap[];
  const items: JsonMap[] = [];
  let replace = false;
  for (const p of patch as JsonMap[]) {
    if (!Object.hasOwn(p, PATCH)) {
      items.push(p);
      continue;
    }
    const directive = p[PATCH];
    if (directive === 'delete') {
      if (!Object.hasOwn(p, key))
        throw unprocessable(`map does not contain declared merge key: ${key}`);
      base = base.filter((o) => o[key] !== p[key]);
    } else if (directive === 'replace') replace = true;
    else if (directive === 'merge')
      throw unprocessable('merging lists cannot yet be specified in the patch');
    else throw unprocessable(`unknown patch type: ${String(directive)} in map`);
  }
  const itemSchema = itemsOf(schema);
  if (replace) return items.map((p) => mergeMap(undefined, p, itemSchema)).filter(isMap);
  const serverOrder = [...base];
  const merged = [...base];
  for (const p of items) {
    if (!Object.hasOwn(p, key))
      throw unprocessable(`map does not contain declared merge key: ${key}`);
    const at = merged.findIndex((o) => o[key] === p[key]);
    const result = mergeMap(at >= 0 ? merged[at] : undefined, p, itemSchema);
    if (result === DELETED) continue;
    if (at >= 0) merged[at] = result;
    else merged.push(result);
  }
  return orderLikePatch(merged, items, serverOrder, key);
}

function isMap(v: JsonMap | typeof DELETED): v is JsonMap {
  return v !== DELETED;
}

/** The one element kind of both lists; lists of lists and mixed kinds cannot merge. */
function commonKind(a: JsonValue[], b: JsonValue[]): Kind {
  let kind: Kind | undefined;
  for (const v of [...a, ...b]) {
    const k = kindOf(v);
    if (kind === undefined) {
      if (k === 'list') throw unprocessable('lists of lists are not supported');
      kind = k;
    } else if (kind !== k) throw unprocessable('list element types are not identical');
  }
  return kind ?? 'null';
}

function orderLikePatch(
  merged: JsonValue[],
  patch: JsonValue[],
  serverOrder: JsonValue[],
  key: string | undefined,
): JsonValue[] {
  const inPatch = merged.filter((m) => indexIn(patch, m, key) >= 0);
  const serverOnly = merged.filter((m) => indexIn(patch, m, key) < 0);
  return normalizeOrder(inPatch, serverOnly, patch, serverOrder, key);
}

/**
 * Kubernetes' ordering of a merged list: the patch's elements in the requested order, and
 * the server-only elements in their server order, interleaved so that a server-only element
 * goes before a patch element only when it also came before it on the server.
 */
function normalizeOrder(
  patchItems: JsonValue[],
  serverOnly: JsonValue[],
  patchOrder: JsonValue[],
  serverOrder: JsonValue[],
  key: string | undefined,
): JsonValue[] {
  const left = sortByIndexIn(serverOnly, serverOrder, key);
  const right = sortByIndexIn(patchItems, patchOrder, key);
  const out: JsonValue[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (j >= right.length) out.push(left[i++] as JsonValue);
    else if (i >= left.length) out.push(right[j++] as JsonValue);
    else {
      const li = indexIn(serverOrder, left[i] as JsonValue, key);
      const ri = indexIn(serverOrder, right[j] as JsonValue, key);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++] as JsonValue);
      else out.push(right[j++] as JsonValue);
    }
  }
  return out;
}

function sortByIndexIn(
  items: JsonValue[],
  order: JsonValue[],
  key: string | undefined,
): JsonValue[] {
  const rank = (v: JsonValue) => {
    const i = indexIn(order, v, key);
    return i < 0 ? Number.POSITIVE_INFINITY : i;
  };
  return items
    .map((v, i) => ({ v, i, r: rank(v) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.v);
}

/** Position of an element in a list: by merge key for maps, by value for scalars. */
function indexIn(list: JsonValue[], item: JsonValue, key: string | undefined): number {
  for (let i = 0; i < list.length; i++) if (sameElement(list[i] as JsonValue, item, key)) return i;
  return -1;
}

function sameElement(a: JsonValue, b: JsonValue, key: string | undefined): boolean {
  if (key === undefined) return a === b;
  return isJsonObject(a) && isJsonObject(b) && a[key] !== undefined && a[key] === b[key];
}
