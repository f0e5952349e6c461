/**
 * Walks of a CRD's structural schema over an object: unknown-field detection and pruning,
 * defaulting (with the removal of nulls the schema does not allow), and the merge metadata
 * server-side apply uses. Value validation is schema.ts's (ajv).
 *
 * Structural-schema rules followed here (as Kubernetes documents them):
 * - fields are specified by `properties` or by `additionalProperties` (a schema); others are
 *   unknown and pruned, unless `x-kubernetes-preserve-unknown-fields: true` keeps them;
 * - at the root and in `x-kubernetes-embedded-resource` objects, `apiVersion`, `kind` and
 *   `metadata` are always known; `metadata` keeps only ObjectMeta's fields;
 * - `allOf`/`anyOf`/`oneOf`/`not` validate values and never make a field known.
 */
import { cloneJson, isJsonObject, type JsonMap, type JsonValue } from './json.js';
import {
  atomicList,
  type FieldSchema,
  type ListSchema,
  type MapSchema,
  SCALAR,
  setList,
} from './merge-schema.js';

/** An OpenAPI v3 schema node as a CRD carries it (only what the walks read). */
export interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode | boolean;
  items?: SchemaNode;
  nullable?: boolean;
  default?: JsonValue;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
  [keyword: string]: unknown;
}

/** metav1.ObjectMeta's JSON fields: the only ones `metadata` keeps. */
export const OBJECT_META_FIELDS: ReadonlySet<string> = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

const RESOURCE_FIELDS = ['apiVersion', 'kind', 'metadata'];

function childPath(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Visits every field the schema does not specify. `drop` removes it (pruning); either way
 * its path (`spec.items[0].bogus`) is reported, in document order.
 */
function walkUnknown(
  value: JsonValue,
  node: SchemaNode | undefined,
  path: string,
  resource: boolean,
  drop: boolean,
  out: string[],
): void {
  if (node === undefined) return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      walkUnknown(v, node.items, `${path}[${i}]`, embedded(node.items), drop, out);
    });
    return;
  }
  if (!isJsonObject(value)) return;
  const preserve = node['x-kubernetes-preserve-unknown-fields'] === true;
  const additional =
    typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
  for (const key of Object.keys(value)) {
    const child = value[key] as JsonValue;
    const p = childPath(path, key);
    if (resource && RESOURCE_FIELDS.includes(key)) {
      if (key === 'metadata' && isJsonObject(child)) walkMetadata(child, p, drop, out);
      continue;
    }
    const prop = node.properties?.[key];
    if (prop !== undefined) walkUnknown(child, prop, p, embedded(prop), drop, out);
    else if (additional !== undefined)
      walkUnknown(child, additional, p, embedded(additional), drop, out);
    else if (!preserve && node.additionalProperties !== true) {
      out.push(p);
      if (drop) delete value[key];
    }
  }
}

function walkMetadata(meta: JsonMap, path: string, drop: boolean, out: string[]): void {
  for (const key of Object.keys(meta)) {
    if (OBJECT_META_FIELDS.has(key)) continue;
    out.push(childPath(path, key));
    if (drop) delete meta[key];
  }
}

function embedded(node: SchemaNode | undefined): boolean {
  return node?.['x-kubernetes-embedded-resource'] === true;
}

/** Paths of the fields of `obj` the schema does not know (the object is not changed). */
export function unknownFieldPaths(obj: JsonValue, root: SchemaNode): string[] {
  const out: string[] = [];
  walkUnknown(obj, root, '', true, false, out);
  return out;
}

/** Removes the fields the schema does not know; returns their paths. */
export function pruneUnknown(obj: JsonValue, root: SchemaNode): string[] {
  const out: string[] = [];
  walkUnknown(obj, root, '', true, true, out);
  return out;
}

/**
 * Kubernetes' defaulting: absent fields with a `default` get a copy of it (a null where
 * null is not allowed counts as absent), then the walk descends into every value, so
 * defaults inside a defaulted object apply too. Nulls the schema does not allow and that
 * have no default are removed.
 */
export function applyDefaults(value: JsonValue, node: SchemaNode | undefined): void {
  if (node === undefined) return;
  if (Array.isArray(value)) {
    for (const v of value) applyDefaults(v, node.items);
    return;
  }
  if (!isJsonObject(value)) return;
  for (const [key, prop] of Object.entries(node.properties ?? {})) {
    const has = Object.hasOwn(value, key);
    const nonNullableNull = has && value[key] === null && prop.nullable !== true;
    if (prop.default !== undefined && (!has || nonNullableNull))
      value[key] = cloneJson(prop.default);
    else if (nonNullableNull) delete value[key];
  }
  const additional =
    typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
  for (const key of Object.keys(value)) {
    const prop = node.properties?.[key] ?? additional;
    if (prop !== undefined) applyDefaults(value[key] as JsonValue, prop);
  }
}

/**
 * The merge metadata of a CRD schema for server-side apply: `x-kubernetes-list-type`
 * (`map` with `x-kubernetes-list-map-keys`, `set`, `atomic` or absent = atomic) and
 * `x-kubernetes-map-type: atomic`.
 */
export function mergeSchemaOf(node: SchemaNode | undefined): FieldSchema {
  if (node === undefined) return SCALAR;
  if (node.type === 'array') return listSchemaOf(node);
  if (node.type === 'object' || node.properties || typeof node.additionalProperties === 'object') {
    const fields: Record<string, FieldSchema> = {};
    for (const [k, p] of Object.entries(node.properties ?? {})) fields[k] = mergeSchemaOf(p);
    const additional =
      typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
    const map: MapSchema = {
      type: 'map',
      fields,
      ...(additional ? { values: mergeSchemaOf(additional) } : {}),
      ...(node['x-kubernetes-map-type'] === 'atomic' ? { atomic: true } : {}),
    };
    return map;
  }
  return SCALAR;
}

function listSchemaOf(node: SchemaNode): ListSchema {
  const items = node.items ? mergeSchemaOf(node.items) : undefined;
  switch (node['x-kubernetes-list-type']) {
    case 'map': {
      const keys = node['x-kubernetes-list-map-keys'] ?? [];
      return {
        type: 'list',
        strategy: 'merge',
        ...(keys[0] !== undefined ? { mergeKey: keys[0] } : {}),
        mapKeys: keys,
        ...(items ? { items } : {}),
      };
    }
    case 'set':
      return setList();
    default:
      return atomicList(items);
  }
}
