/**
 * Field sets: which fields of an object a manager owns, as Kubernetes records them in
 * `metadata.managedFields[].fieldsV1`:
 *
 *     {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
 *        "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}
 *
 * A path is a list of elements: `f:<field>` (a map field), `k:<json>` (the element of a
 * keyed list with those key values), `v:<json>` (the element of a set list with that value).
 * A set holds member paths: leaves, and keyed/set elements themselves (the `"."` entries).
 */
import { unprocessable } from './errors.js';
import { isJsonObject, type JsonMap, type JsonValue } from './json.js';
import { type FieldSchema, fieldOf, itemsOf, listKeys } from './merge-schema.js';

export type PathElement = string;
export type FieldPath = readonly PathElement[];

const SEP = '\u0000';

/** A set of member paths. */
export class FieldSet {
  private readonly paths = new Set<string>();

  static of(paths: Iterable<FieldPath>): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.add(p);
    return s;
  }

  add(path: FieldPath): void {
    this.paths.add(path.join(SEP));
  }

  has(path: FieldPath): boolean {
    return this.paths.has(path.join(SEP));
  }

  delete(path: FieldPath): void {
    this.paths.delete(path.join(SEP));
  }

  get size(): number {
    return this.paths.size;
  }

  /** True when the set holds `path` or anything below it. */
  hasOrBelow(path: FieldPath): boolean {
    const prefix = path.join(SEP);
    if (this.paths.has(prefix)) return true;
    for (const p of this.paths) if (p.startsWith(prefix + SEP)) return true;
    return false;
  }

  *[Symbol.iterator](): IterableIterator<FieldPath> {
    for (const p of this.paths) yield p === '' ? [] : p.split(SEP);
  }

  /** Members of this set that are not in `other`. */
  minus(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const p of this.paths) if (!other.paths.has(p)) out.paths.add(p);
    return out;
  }

  /** Encodes as FieldsV1 (the JSON object of managedFields[].fieldsV1). */
  toFieldsV1(): JsonMap {
    const root: JsonMap = {};
    const paths = [...this];
    for (const path of paths) {
      let node = root;
      for (const el of path) {
        let next = node[el];
        if (!isJsonObject(next)) {
          next = {};
          node[el] = next;
        }
        node = next;
      }
    }
    // A member with children is marked with "."; a member without children is `{}`.
    for (const path of paths) {
      const node = nodeAt(root, path);
      if (node && Object.keys(node).length > 0 && path.length > 0) node['.'] = {};
    }
    return sortKeys(root);
  }

  /** Decodes FieldsV1; unknown shapes are ignored rather than trusted. */
  static fromFieldsV1(v: unknown): FieldSet {
    const s = new FieldSet();
    const walk = (node: JsonMap, prefix: PathElement[]) => {
      const keys = Object.keys(node);
      if (keys.length === 0 && prefix.length > 0) s.add(prefix);
      for (const k of keys) {
        if (k === '.') {
          s.add(prefix);
          continue;
        }
        const child = node[k];
        if (isJsonObject(child)) walk(child, [...prefix, k]);
      }
    };
    if (isJsonObject(v)) walk(v, []);
    return s;
  }
}

function nodeAt(root: JsonMap, path: FieldPath): JsonMap | undefined {
  let node: JsonValue = root;
  for (const el of path) {
    if (!isJsonObject(node)) return undefined;
    node = node[el] as JsonValue;
  }
  return isJsonObject(node) ? node : undefined;
}

function sortKeys(m: JsonMap): JsonMap {
  const out: JsonMap = {};
  for (const k of Object.keys(m).sort()) {
    const v = m[k] as JsonValue;
    out[k] = isJsonObject(v) ? sortKeys(v) : v;
  }
  return out;
}

// --- path elements -------------------------------------------------------------------------------

export function fieldElement(name: string): PathElement {
  return `f:${name}`;
}

/** `k:{"name":"nginx"}`: key fields in name order, values as JSON. */
export function keyElement(element: JsonMap, keys: readonly string[]): PathElement {
  const obj: JsonMap = {};
  for (const k of [...keys].sort()) obj[k] = element[k] as JsonValue;
  return `k:${JSON.stringify(obj)}`;
}

export function valueElement(v: JsonValue): PathElement {
  return `v:${JSON.stringify(v)}`;
}

/** How Kubernetes prints a path in conflict messages: `.spec.containers[name="nginx"].image`. */
export function pathString(path: FieldPath): string {
  let out = '';
  for (const el of path) {
    const body = el.slice(2);
    if (el.startsWith('f:')) out += `.${body}`;
    else if (el.startsWith('v:')) out += `[=${body}]`;
    else if (el.startsWith('k:')) {
      const key = JSON.parse(body) as JsonMap;
      out += `[${Object.entries(key)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(',')}]`;
    } else out += `[${body}]`;
  }
  return out;
}

// --- sets of objects ---------------------------------------------------------------------------------

/**
 * The member paths of an object's fields under a merge schema. `skip(path)` leaves fields
 * out (apiVersion, kind, identity metadata, reset fields such as status).
 */
export function fieldSetOf(
  obj: JsonValue,
  schema: FieldSchema | undefined,
  skip: (path: FieldPath) => boolean = () => false,
): FieldSet {
  const set = new FieldSet();
  collect(obj, schema, [], set, skip);
  return set;
}

function collect(
  value: JsonValue,
  schema: FieldSchema | undefined,
  path: PathElement[],
  set: FieldSet,
  skip: (path: FieldPath) => boolean,
): void {
  if (isJsonObject(value) && !(schema?.type === 'map' && schema.atomic)) {
    const keys = Object.keys(value);
    let any = false;
    for (const k of keys) {
      const p = [...path, fieldElement(k)];
      if (skip(p)) continue;
      any = true;
      collect(value[k] as JsonValue, fieldOf(schema, k), p, set, skip);
    }
    if (!any && path.length > 0 && keys.length === 0) set.add(path);
    return;
  }
  if (Array.isArray(value) && schema?.type === 'list' && schema.strategy === 'merge') {
    const keys = listKeys(schema);
    value.forEach((el, i) => {
      if (keys.length === 0) {
        set.add([...path, valueElement(el)]);
        return;
      }
      if (!isJsonObject(el))
        throw unprocessable(`${pathString(path)}: element ${i} is not an object`);
      for (const k of keys) {
        if (el[k] === undefined) {
          throw unprocessable(
            `${pathString(path)}: element ${i}: associative list with keys has an element that omits key field "${k}"`,
          );
        }
      }
      const p = [...path, keyElement(el, keys)];
      set.add(p);
      collect(el, itemsOf(schema), p, set, skip);
    });
    return;
  }
  set.add(path);
}

/** Where a path leads in an object: the container and the key or index of the target. */
function locate(
  obj: JsonValue,
  path: FieldPath,
): { container: JsonMap | JsonValue[]; at: string | number } | undefined {
  let cur: JsonValue = obj;
  for (let i = 0; i < path.length; i++) {
    const el = path[i] as PathElement;
    let container: JsonMap | JsonValue[];
    let at: string | number;
    if (el.startsWith('f:')) {
      if (!isJsonObject(cur)) return undefined;
      container = cur;
      at = el.slice(2);
      if (!Object.hasOwn(cur, at)) return undefined;
    } else {
      if (!Array.isArray(cur)) return undefined;
      container = cur;
      at = cur.findIndex((e) => matchesElement(e, el));
      if (at < 0) return undefined;
    }
    if (i === path.length - 1) return { container, at };
    cur = (container as Record<string | number, JsonValue>)[at] as JsonValue;
  }
  return undefined;
}

function matchesElement(e: JsonValue, el: PathElement): boolean {
  const body = JSON.parse(el.slice(2)) as JsonValue;
  if (el.startsWith('v:')) return JSON.stringify(e) === JSON.stringify(body);
  if (!isJsonObject(e) || !isJsonObject(body)) return false;
  return Object.entries(body).every(([k, v]) => JSON.stringify(e[k]) === JSON.stringify(v));
}

/** The value at a path, or undefined. */
export function valueAt(obj: JsonValue, path: FieldPath): JsonValue | undefined {
  if (path.length === 0) return obj;
  const loc = locate(obj, path);
  if (!loc) return undefined;
  return (loc.container as Record<string | number, JsonValue>)[loc.at];
}

/** Removes the field or element at a path; returns whether something was removed. */
export function removeAt(obj: JsonValue, path: FieldPath): boolean {
  const loc = locate(obj, path);
  if (!loc) return false;
  if (Array.isArray(loc.container)) loc.container.splice(loc.at as number, 1);
  else delete loc.container[loc.at as string];
  return true;
}
