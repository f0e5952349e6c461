/**
 * Server-side apply (`application/apply-patch+yaml`): the applied configuration is merged
 * into the live object with the kind's merge metadata (maps by key, keyed lists by their
 * keys, set lists as sets, other lists replaced), and field ownership is recorded in
 * `metadata.managedFields` as Kubernetes does:
 *
 * - the manager's Apply entry lists exactly the fields of its latest applied configuration;
 * - fields the manager applied before and omits now are removed from the object, unless
 *   another manager also owns them;
 * - a field another manager owns with a different value is a conflict (409 with
 *   FieldManagerConflict causes), unless `force` is set, which takes the field over;
 * - equal values are shared: both managers keep the field.
 *
 * `recordUpdate` gives non-apply writes (create, update, patch) their `Update` entry, so that
 * appliers conflict with them as in Kubernetes. The server decides whether to use it.
 *
 * Simplifications: no version conversion of managed fields (one version per kind is
 * served); a null in an applied configuration removes the field (Kubernetes' typed
 * conversion drops it too).
 */
import { badRequest, KubeLibError } from './errors.js';
import { goQuote, type StatusCause } from './field-errors.js';
import {
  type FieldPath,
  FieldSet,
  fieldElement,
  fieldValues,
  keyElement,
  keyOf,
  PRESENT,
  pathOfKey,
  pathString,
  removeAt,
  valueAt,
  valueElement,
} from './field-set.js';
import { cloneJson, isJsonObject, type JsonMap, type JsonValue, jsonEqual } from './json.js';
import { type FieldSchema, fieldOf, itemsOf, listKeys, type MapSchema } from './merge-schema.js';

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time?: string;
  fieldsType: 'FieldsV1';
  fieldsV1: JsonMap;
  subresource?: string;
}

export interface ApplyOptions {
  /** fieldManager (required for apply; validateApplyOptions checks it). */
  manager: string;
  force?: boolean;
  /** The apiVersion of the kind, recorded in the entry. */
  apiVersion: string;
  /** Merge metadata: smpSchemaFor(...) for built-in kinds, the CRD's mergeSchema otherwise. */
  schema: MapSchema | undefined;
  /** Top-level fields the request may not set (e.g. ['status'] on the main resource). */
  resetFields?: readonly string[];
  /** Entry time (RFC 3339, whole seconds); default now. */
  now?: Date;
  subresource?: string;
}

export interface ApplyResult {
  object: JsonMap;
  created: boolean;
}

/** Fields never owned: identity and bookkeeping (Kubernetes strips the same). */
const STRIPPED_META = new Set([
  'name',
  'namespace',
  'uid',
  'creationTimestamp',
  'generation',
  'managedFields',
  'resourceVersion',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
]);

function skipper(resetFields: readonly string[] = []): (key: string) => boolean {
  const skipped = new Set<string>([keyOf(['f:apiVersion']), keyOf(['f:kind'])]);
  for (const f of resetFields) skipped.add(keyOf([`f:${f}`]));
  for (const m of STRIPPED_META) skipped.add(keyOf(['f:metadata', `f:${m}`]));
  return (key) => skipped.has(key);
}

export function formatTime(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}

/** The managedFields entries of an object (malformed ones dropped). */
export function managedFieldsOf(obj: JsonValue | undefined): ManagedFieldsEntry[] {
  const meta = isJsonObject(obj) ? obj.metadata : undefined;
  const list = isJsonObject(meta) ? meta.managedFields : undefined;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (e): e is JsonMap =>
      isJsonObject(e) &&
      typeof e.manager === 'string' &&
      (e.operation === 'Apply' || e.operation === 'Update'),
  ) as unknown as ManagedFieldsEntry[];
}

function sameEntry(
  e: ManagedFieldsEntry,
  manager: string,
  op: string,
  sub: string | undefined,
): boolean {
  return e.manager === manager && e.operation === op && (e.subresource ?? '') === (sub ?? '');
}

/**
 * Applies `applied` to `live` (absent: create). Neither input is modified. Throws 400 for a
 * configuration carrying managedFields, 409 with causes for conflicts, 422 for keyed-list
 * elements without their keys.
 */
export function serverSideApply(
  live: JsonMap | undefined,
  applied: unknown,
  options: ApplyOptions,
): ApplyResult {
  if (!isJsonObject(applied))
    throw badRequest('error decoding YAML: the applied configuration must be an object');
  const meta = applied.metadata;
  if (isJsonObject(meta) && meta.managedFields !== undefined)
    throw badRequest('metadata.managedFields must be nil');
  const skip = skipper(options.resetFields);
  const config = cloneJson(applied);
  for (const f of options.resetFields ?? []) delete config[f];
  const appliedValues = fieldValues(config, options.schema, skip);
  const newSet = FieldSet.fromKeys(appliedValues.keys());
  const base: JsonMap = live ? cloneJson(live) : {};
  // Entries are read from the input, not the copy: their fieldsV1 objects are shared with
  // the result (never mutated), so decoding is cached by identity across writes.
  const entries = managedFieldsOf(live);
  const mine = entries.find((e) => sameEntry(e, options.manager, 'Apply', options.subresource));
  const others = entries.filter((e) => e !== mine);
  const otherSets = others.map((e) => FieldSet.fromFieldsV1(e.fieldsV1));

  const conflicts = findConflicts(base, appliedValues, options, others, otherSets);
  if (conflicts.length > 0 && !options.force) throw conflictError(conflicts);
  for (const c of conflicts) otherSets[c.owner]?.delete(c.path);

  if (mine) removeAbandoned(base, FieldSet.fromFieldsV1(mine.fieldsV1).minus(newSet), otherSets);
  const merged = mergeApplied(base, config, options.schema) as JsonMap;

  const time = formatTime(options.now ?? new Date());
  const entry: ManagedFieldsEntry = {
    manager: options.manager,
    operation: 'Apply',
    apiVersion: options.apiVersion,
    time,
    fieldsType: 'FieldsV1',
    fieldsV1:
      mine && FieldSet.fromFieldsV1(mine.fieldsV1).equals(newSet)
        ? mine.fieldsV1
        : newSet.toFieldsV1(),
    ...(options.subresource ? { subresource: options.subresource } : {}),
  };
  // Entries keep their order; owners left with nothing are dropped.
  const list: ManagedFieldsEntry[] = [];
  for (const e of entries) {
    if (e === mine) {
      list.push(entry);
      continue;
    }
    const set = otherSets[others.indexOf(e)] as FieldSet;
    if (!set.modified) list.push(e);
    else if (set.size > 0) list.push({ ...e, fieldsV1: set.toFieldsV1() });
  }
  if (!mine) list.push(entry);
  setManagedFields(merged, list);
  return { object: merged, created: live === undefined };
}

function setManagedFields(obj: JsonMap, entries: ManagedFieldsEntry[]): void {
  const meta = isJsonObject(obj.metadata) ? obj.metadata : {};
  meta.managedFields = entries as unknown as JsonValue[];
  obj.metadata = meta;
}

interface Conflict {
  owner: number;
  manager: string;
  entry: ManagedFieldsEntry;
  path: FieldPath;
}

/**
 * Leaf fields another manager owns whose applied value differs from the live one. The live
 * object is walked only when someone else owns one of the applied fields.
 */
function findConflicts(
  live: JsonMap,
  applied: Map<string, JsonValue | typeof PRESENT>,
  options: ApplyOptions,
  others: ManagedFieldsEntry[],
  otherSets: FieldSet[],
): Conflict[] {
  const out: Conflict[] = [];
  let liveValues: Map<string, JsonValue | typeof PRESENT> | undefined;
  for (const [key, want] of applied) {
    if (want === PRESENT) continue; // element presence is shared, never a conflict
    if (!otherSets.some((s) => s.hasKey(key))) continue;
    liveValues ??= fieldValues(live, options.schema, skipper(options.resetFields));
    const have = liveValues.get(key);
    if (have !== undefined && have !== PRESENT && jsonEqual(want, have)) continue;
    otherSets.forEach((set, i) => {
      const entry = others[i] as ManagedFieldsEntry;
      if (set.hasKey(key))
        out.push({ owner: i, manager: entry.manager, entry, path: pathOfKey(key) });
    });
  }
  return out;
}

function printManager(e: ManagedFieldsEntry): string {
  let s = goQuote(e.manager);
  if (e.subresource) s += ` with subresource ${goQuote(e.subresource)}`;
  // Kubernetes identifies managers without their time, so conflicts never print it.
  if (e.operation === 'Update') s += ` using ${e.apiVersion}`;
  return s;
}

/** Kubernetes' 409 for apply conflicts, one FieldManagerConflict cause per field. */
function conflictError(conflicts: Conflict[]): KubeLibError {
  const causes: StatusCause[] = conflicts.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${printManager(c.entry)}`,
    field: pathString(c.path),
  }));
  let message: string;
  const first = conflicts[0] as Conflict;
  if (conflicts.length === 1) {
    message = `Apply failed with 1 conflict: conflict with ${printManager(first.entry)}: ${pathString(first.path)}`;
  } else {
    const byManager = new Map<string, { entry: ManagedFieldsEntry; paths: string[] }>();
    for (const c of conflicts) {
      const key = JSON.stringify([c.manager, c.entry.operation, c.entry.subresource ?? '']);
      const group = byManager.get(key) ?? { entry: c.entry, paths: [] };
      group.paths.push(pathString(c.path));
      byManager.set(key, group);
    }
    const lines: string[] = [];
    for (const key of [...byManager.keys()].sort()) {
      const g = byManager.get(key) as { entry: ManagedFieldsEntry; paths: string[] };
      lines.push(`conflicts with ${printManager(g.entry)}:`, ...g.paths.map((p) => `- ${p}`));
    }
    message = `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`;
  }
  return new KubeLibError('Conflict', message, { causes });
}

/**
 * Removes fields the manager no longer applies and nobody else owns, then maps left empty
 * by that (unless someone owns the map itself). Shallow paths go first: an abandoned list
 * element goes as a whole before its fields (its key fields among them) are looked at.
 */
function removeAbandoned(obj: JsonMap, abandoned: FieldSet, otherSets: FieldSet[]): void {
  const paths = [...abandoned].sort((a, b) => a.length - b.length);
  for (const path of paths) {
    if (otherSets.some((s) => s.hasOrBelow(path))) continue;
    if (!removeAt(obj, path)) continue;
    for (let n = path.length - 1; n > 0; n--) {
      const parentPath = path.slice(0, n);
      const parent = valueAt(obj, parentPath);
      const empty = isJsonObject(parent)
        ? Object.keys(parent).length === 0
        : Array.isArray(parent) && parent.length === 0;
      if (!empty) break;
      if (!(parentPath[parentPath.length - 1] ?? '').startsWith('f:')) break;
      if (otherSets.some((s) => s.has(parentPath))) break;
      removeAt(obj, parentPath);
    }
  }
}

/** Structured merge of an applied configuration into a (copied) live value. */
function mergeApplied(
  live: JsonValue | undefined,
  applied: JsonValue,
  schema: FieldSchema | undefined,
): JsonValue {
  if (isJsonObject(applied) && isJsonObject(live) && !(schema?.type === 'map' && schema.atomic)) {
    const out: JsonMap = live;
    for (const [k, v] of Object.entries(applied)) {
      if (v === null) delete out[k];
      else out[k] = mergeApplied(out[k], v, fieldOf(schema, k));
    }
    return out;
  }
  if (
    Array.isArray(applied) &&
    Array.isArray(live) &&
    schema?.type === 'list' &&
    schema.strategy === 'merge'
  ) {
    const keys = listKeys(schema);
    const idOf = (e: JsonValue) =>
      keys.length > 0 ? (isJsonObject(e) ? keyElement(e, keys) : undefined) : valueElement(e);
    const out = [...live];
    const index = new Map<string, number>();
    out.forEach((o, i) => {
      const id = idOf(o);
      if (id !== undefined && !index.has(id)) index.set(id, i);
    });
    for (const el of applied) {
      const id = idOf(el);
      const at = id === undefined ? undefined : index.get(id);
      if (at === undefined) {
        if (id !== undefined) index.set(id, out.length);
        out.push(withoutNulls(el));
      } else if (keys.length > 0) out[at] = mergeApplied(out[at], el, itemsOf(schema));
    }
    return out;
  }
  return withoutNulls(applied);
}

function withoutNulls(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (isJsonObject(v)) {
    const out: JsonMap = {};
    for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = withoutNulls(x);
    return out;
  }
  return v;
}

// --- non-apply writes ----------------------------------------------------------------------------

export interface UpdateOptions {
  manager: string;
  apiVersion: string;
  schema: MapSchema | undefined;
  resetFields?: readonly string[];
  now?: Date;
  subresource?: string;
}

/**
 * Records a create, update or patch by `manager`: the fields it changed (set or modified)
 * join its Update entry and leave every other manager's set (an update takes ownership,
 * never conflicts). Returns `next` with its managedFields set; `prev` is the live object
 * before the write (absent on create).
 */
export function recordUpdate(
  prev: JsonMap | undefined,
  next: JsonMap,
  options: UpdateOptions,
): JsonMap {
  const skip = skipper(options.resetFields);
  const out = cloneJson(next);
  const entries = managedFieldsOf(prev ?? next);
  const nextValues = fieldValues(out, options.schema, skip);
  const prevValues = prev ? fieldValues(prev, options.schema, skip) : undefined;
  const changed: string[] = [];
  for (const [key, v] of nextValues) {
    const before = prevValues?.get(key);
    if (before === undefined || (v !== PRESENT && (before === PRESENT || !jsonEqual(before, v)))) {
      changed.push(key);
    }
  }
  const sets = entries.map((e) => FieldSet.fromFieldsV1(e.fieldsV1));
  // Fields that no longer exist are owned by nobody.
  for (const s of sets) for (const k of [...s.keys()]) if (!nextValues.has(k)) s.deleteKey(k);
  let mine = entries.findIndex((e) => sameEntry(e, options.manager, 'Update', options.subresource));
  sets.forEach((s, i) => {
    if (i !== mine) for (const k of changed) s.deleteKey(k);
  });
  if (changed.length > 0) {
    if (mine < 0) {
      entries.push({
        manager: options.manager,
        operation: 'Update',
        apiVersion: options.apiVersion,
        fieldsType: 'FieldsV1',
        fieldsV1: {},
        ...(options.subresource ? { subresource: options.subresource } : {}),
      });
      sets.push(new FieldSet());
      mine = entries.length - 1;
    }
    const own = sets[mine] as FieldSet;
    for (const k of changed) own.addKey(k);
    entries[mine] = {
      ...(entries[mine] as ManagedFieldsEntry),
      time: formatTime(options.now ?? new Date()),
    };
  }
  const result = entries
    .map((e, i) => {
      const set = sets[i] as FieldSet;
      return set.modified ? { ...e, fieldsV1: set.toFieldsV1() } : e;
    })
    .filter((_, i) => (sets[i] as FieldSet).size > 0);
  if (result.length > 0 || isJsonObject(out.metadata)) setManagedFields(out, result);
  if (result.length === 0 && isJsonObject(out.metadata)) delete out.metadata.managedFields;
  return out;
}

/** The field element helpers, for tests and callers that build paths. */
export const pathElements = { field: fieldElement, key: keyElement, value: valueElement };
