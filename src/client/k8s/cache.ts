/**
 * The informer's local store: objects by key (`namespace/name` or `name`), with indexes.
 * An index function maps an object to the values it is filed under (a pod under its node
 * name, say); `byIndex(index, value)` then answers without a scan. The `namespace` index
 * is always there.
 *
 * Invariant: for every index, value and key, key ∈ index[value] iff the stored object at
 * key yields value. Objects are stored as given: callers must not mutate them.
 */
import { type KubeObject, objectKey } from './types.js';

export type IndexFunc<T> = (obj: T) => readonly string[];

export const NAMESPACE_INDEX = 'namespace';

export class ObjectCache<T extends KubeObject = KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexFuncs = new Map<string, IndexFunc<T>>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();

  constructor(indexers: Record<string, IndexFunc<T>> = {}) {
    this.addIndex(NAMESPACE_INDEX, (o) => [o.metadata.namespace ?? '']);
    for (const [name, fn] of Object.entries(indexers)) this.addIndex(name, fn);
  }

  /** Adds an index (filling it from what is stored). */
  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexFuncs.has(name)) throw new TypeError(`index ${name} exists`);
    this.indexFuncs.set(name, fn);
    this.indexes.set(name, new Map());
    for (const [key, obj] of this.items) this.file(name, fn, key, obj);
  }

  get size(): number {
    return this.items.size;
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  getByName(namespace: string | undefined, name: string): T | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  byIndex(index: string, value: string): T[] {
    const keys = this.indexOf(index).get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.items.get(k) as T);
  }

  /** The values an index currently has objects under. */
  indexValues(index: string): string[] {
    return [...this.indexOf(index).keys()];
  }

  /** Stores an object; returns the one it replaced. */
  upsert(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    if (old) this.unfileAll(key, old);
    this.items.set(key, obj);
    for (const [name, fn] of this.indexFuncs) this.file(name, fn, key, obj);
    return old;
  }

  /** Removes by key; returns what was stored. */
  remove(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unfileAll(key, old);
    this.items.delete(key);
    return old;
  }

  clear(): void {
    this.items.clear();
    for (const idx of this.indexes.values()) idx.clear();
  }

  private indexOf(index: string): Map<string, Set<string>> {
    const idx = this.indexes.get(index);
    if (!idx) throw new TypeError(`no index ${index}`);
    return idx;
  }

  private file(name: string, fn: IndexFunc<T>, key: string, obj: T): void {
    const idx = this.indexes.get(name) as Map<string, Set<string>>;
    for (const v of fn(obj)) {
      let keys = idx.get(v);
      if (!keys) idx.set(v, (keys = new Set()));
      keys.add(key);
    }
  }

  private unfileAll(key: string, obj: T): void {
    for (const [name, fn] of this.indexFuncs) {
      const idx = this.indexes.get(name) as Map<string, Set<string>>;
      for (const v of fn(obj)) {
        const keys = idx.get(v);
        if (!keys) continue;
        keys.delete(key);
        if (keys.size === 0) idx.delete(v);
      }
    }
  }
}
