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

/** The FieldSet key of a path (its elements joined). */
export function keyOf(path: FieldPath): string {
  return path.join(SEP);
}

/** The path a FieldSet key (a joined path) stands for. */
export function pathOfKey(key: string): FieldPath {
  return key === '' ? [] : key.split(SEP);
}

/** Decoded FieldsV1 by identity: stored objects are decoded once, not on every write. */
const decoded = new WeakMap<object, ReadonlySet<string>>();

/** A set of member paths. */
export class FieldSet {
  private readonly paths = new Set<string>();
  /** Set by every change: callers re-encode only the sets that changed. */
  modified = false;

  static fromKeys(keys: Iterable<string>): FieldSet {
    const s = new FieldSet();
    for (const k of keys) s.paths.add(k);
    return s;
  }

  static of(paths: Iterable<FieldPath>): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.add(p);
    return s;
  }

  add(path: FieldPath): void {
    this.addKey(path.join(SEP));
  }

  /** Key-level access: a key is a path joined as fieldValues() keys its map. */
  addKey(key: string): void {
    if (this.paths.has(key)) return;
    this.paths.add(key);
    this.modified = true;
  }

  hasKey(key: string): boolean {
    return this.paths.has(key);
  }

  deleteKey(key: string): void {
    if (this.paths.delete(key)) this.modified = true;
  }

  keys(): IterableIterator<string> {
    return this.paths.values();
  }

  has(path: FieldPath): boolean {
    return this.paths.has(path.join(SEP));
  }

  delete(path: FieldPath): void {
    this.deleteKey(path.join(SEP));
  }

  /** Same members. */
  equals(other: FieldSet): boolean {
    if (this.paths.size !== other.paths.size) return false;
    for (const p of this.paths) if (!other.paths.has(p)) return false;
    return true;
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

  /** Encodes as FieldsV1 (the JSON object of managedFields[].fieldsV1), keys sorted. */
  toFieldsV1(): JsonMap {
    const root: TrieNode = { children: new Map(), member: false };
    for (const key of this.paths) {
      let node = root;
      if (key !== '') {
        for (const el of key.split(SEP)) {
          let next = node.children.get(el);
          if (!next) {
            next = { children: new Map(), member: false };
            node.children.set(el, next);
          }
          node = next;
        }
      }
      node.member = true;
    }
    return emitTrie(root, true);
  }

  /** Decodes FieldsV1; unknown shapes are ignored rather than trusted. */
  static fromFieldsV1(v: unknown): FieldSet {
    const s = new FieldSet();
    const known = isJsonObject(v) ? decoded.get(v) : undefined;
    if (known) {
      for (const k of known) s.paths.add(k);
      return s;
    }
    const walk = (node: JsonMap, prefix: string | undefined) => {
      const keys = Object.keys(node);
      if (keys.length === 0 && prefix !== undefined) s.paths.add(prefix);
      for (const k of keys) {
        if (k === '.') {
          if (prefix !== undefined) s.paths.add(prefix);
          continue;
        }
        const child = node[k];
        if (isJsonObject(child)) walk(child, prefix === undefined ? k : prefix + SEP + k);
      }
    };
    if (isJsonObject(v)) {
      walk(v, undefined);
      decoded.set(v, new Set(s.paths));
    }
    return s;
  }
}

interface TrieNode {
  children: Map<string, TrieNode>;
  member: boolean;
}

/** A member with children is marked with "."; a member without children is `{}`. */
function emitTrie(node: TrieNode, root: boolean): JsonMap {
  const out: JsonMap = {};
  if (!root && node.member && node.children.size > 0) out['.'] = {};
  for (const k of [...node.children.keys()].sort()) {
    out[k] = emitTrie(node.children.get(k) as TrieNode, false);
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
 * The member paths of an object's fields under a merge schema. `skip(key)` leaves fields
 * out (apiVersion, kind, identity metadata, reset fields such as status).
 */
export function fieldSetOf(
  obj: JsonValue,
  schema: FieldSchema | undefined,
  skip: (key: string) => boolean = () => false,
): FieldSet {
  const set = new FieldSet();
  collect(obj, schema, undefined, 0, skip, (key) => set.addKey(key));
  return set;
}

/** Stands for "the element is there" where fieldValues() maps a list element's own path. */
export const PRESENT: unique symbol = Symbol('present');

/**
 * Every member path of an object (joined as FieldSet keys) with its value: the leaf value,
 * or PRESENT for keyed and set elements. One walk; comparing two of these maps is how
 * changed fields are found without looking paths up one by one.
 */
export function fieldValues(
  obj: JsonValue,
  schema: FieldSchema | undefined,
  skip: (key: string) => boolean = () => false,
): Map<string, JsonValue | typeof PRESENT> {
  const out = new Map<string, JsonValue | typeof PRESENT>();
  collect(obj, schema, undefined, 0, skip, (key, value) => out.set(key, value));
  return out;
}

type Visit = (key: string, value: JsonValue | typeof PRESENT) => void;

/** Only the first two path elements matter to `skip` (apiVersion, kind, metadata.x, status). */
const SKIP_DEPTH = 2;

function collect(
  value: JsonValue,
  schema: FieldSchema | undefined,
  key: string | undefined,
  depth: number,
  skip: (key: string) => boolean,
  visit: Visit,
): void {
  if (isJsonObject(value) && !(schema?.type === 'map' && schema.atomic)) {
    const keys = Object.keys(value);
    for (const k of keys) {
      const child = key === undefined ? fieldElement(k) : key + SEP + fieldElement(k);
      if (depth < SKIP_DEPTH && skip(child)) continue;
      collect(value[k] as JsonValue, fieldOf(schema, k), child, depth + 1, skip, visit);
    }
    if (key !== undefined && keys.length === 0) visit(key, value);
    return;
  }
  if (key === undefined) return;
  if (Array.isArray(value) && schema?.type === 'list' && schema.strategy === 'merge') {
    const keys = listKeys(schema);
    value.forEach((el, i) => {
      if (keys.length === 0) {
        visit(key + SEP + valueElement(el), PRESENT);
        return;
      }
      if (!isJsonObject(el)) {
        throw unprocessable(`${pathString(pathOfKey(key))}: element ${i} is not an object`);
      }
      for (const k of keys) {
        if (el[k] === undefined) {
          throw unprocessable(
            `${pathString(pathOfKey(key))}: element ${i}: associative list with keys has an element that omits key field "${k}"`,
          );
        }
      }
      const child = key + SEP + keyElement(el, keys);
      visit(child, PRESENT);
      collect(el, itemsOf(schema), child, depth + 1, skip, visit);
    });
    return;
  }
  visit(key, value);
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
