/**
 * Per-field merge metadata shared by strategic merge patch and server-side apply: which maps
 * merge key by key (or are replaced whole), which lists are atomic, which merge by a key, and
 * which are sets of scalars. Kubernetes keeps this in struct tags (`patchStrategy`,
 * `patchMergeKey`) for built-in kinds and in `x-kubernetes-list-type` / `-list-map-keys` /
 * `-map-type` for CRDs; here both become the same small tree.
 *
 * A field the schema does not describe is treated as Kubernetes treats untyped JSON: maps
 * merge recursively, lists are atomic.
 */

export interface MapSchema {
  readonly type: 'map';
  /** Known fields (a struct). */
  readonly fields?: Readonly<Record<string, FieldSchema>>;
  /** The schema of every value of a map with arbitrary keys (map[string]T). */
  readonly values?: FieldSchema;
  /** `patchStrategy: replace` / `x-kubernetes-map-type: atomic`: replaced whole, never merged. */
  readonly atomic?: boolean;
  /** `patchStrategy: retainKeys`: a union whose `$retainKeys` directive drops other keys. */
  readonly retainKeys?: boolean;
}

export interface ListSchema {
  readonly type: 'list';
  /**
   * `atomic`: replaced whole. `merge`: maps merged by `mergeKey`, or scalars merged as a set
   * when `mergeKey` is absent (metadata.finalizers).
   */
  readonly strategy: 'atomic' | 'merge';
  /** The key strategic merge patch matches elements by. */
  readonly mergeKey?: string;
  /**
   * The keys server-side apply matches elements by (defaults to [mergeKey]). Kubernetes uses
   * more than one for some lists (container ports: containerPort + protocol).
   */
  readonly mapKeys?: readonly string[];
  /** Each item's map keeps only its `$retainKeys` (`patchStrategy: merge,retainKeys`). */
  readonly retainKeys?: boolean;
  readonly items?: FieldSchema;
}

export interface ScalarSchema {
  readonly type: 'scalar';
}

export type FieldSchema = MapSchema | ListSchema | ScalarSchema;

export const SCALAR: ScalarSchema = { type: 'scalar' };

/** The schema of a map's field, or undefined when the schema says nothing about it. */
export function fieldOf(schema: FieldSchema | undefined, key: string): FieldSchema | undefined {
  if (schema?.type !== 'map') return undefined;
  return schema.fields?.[key] ?? schema.values;
}

/** The schema of a list's items. */
export function itemsOf(schema: FieldSchema | undefined): FieldSchema | undefined {
  return schema?.type === 'list' ? schema.items : undefined;
}

/** The keys that identify an element of a keyed list, or [] for atomic and set lists. */
export function listKeys(schema: ListSchema): readonly string[] {
  if (schema.strategy !== 'merge') return [];
  if (schema.mapKeys && schema.mapKeys.length > 0) return schema.mapKeys;
  return schema.mergeKey ? [schema.mergeKey] : [];
}

// --- builders for hand-written schemas ------------------------------------------------------

export function struct(
  fields: Record<string, FieldSchema>,
  options: { retainKeys?: boolean; atomic?: boolean } = {},
): MapSchema {
  return { type: 'map', fields, ...options };
}

export function mapOf(values: FieldSchema): MapSchema {
  return { type: 'map', values };
}

/** A list merged by `key` (maps), optionally with extra apply keys and retainKeys items. */
export function keyedList(
  key: string,
  items?: FieldSchema,
  options: { mapKeys?: readonly string[]; retainKeys?: boolean } = {},
): ListSchema {
  return {
    type: 'list',
    strategy: 'merge',
    mergeKey: key,
    ...(items ? { items } : {}),
    ...options,
  };
}

/** A list of scalars merged as a set. */
export function setList(): ListSchema {
  return { type: 'list', strategy: 'merge' };
}

export function atomicList(items?: FieldSchema): ListSchema {
  return { type: 'list', strategy: 'atomic', ...(items ? { items } : {}) };
}
