/**
 * The decoded object cache of the Kubernetes face: every object under /registry/, parsed once,
 * kept in key order per resource, with indexes by field value (spec.nodeName for pods) so
 * that a list or watch for one value looks only at its objects.
 *
 * Invariant: a CachedObject and the object it holds are never mutated once built; the JSON
 * of each version is computed at most once and shared by every list and watch that sends it.
 * Callers that want to change an object clone it first.
 */
import sortedBtree from 'sorted-btree';
import type { KubeObject, ResourceInfo } from '../../../k8s/types.js';
import { apiVersionOf } from '../../../k8s/types.js';

export class CachedObject {
  private encoded: string | undefined;
  private encodedAs: string | undefined;

  constructor(
    readonly obj: KubeObject,
    /** The object's resourceVersion (its mod revision, or the delete revision). */
    readonly rv: number,
  ) {}

  /** The object's JSON as the given resource version serves it (apiVersion and kind set). */
  json(info: ResourceInfo): string {
    const apiVersion = apiVersionOf(info);
    if (this.encodedAs === apiVersion && this.encoded !== undefined) return this.encoded;
    const text =
      this.obj.apiVersion === apiVersion && this.obj.kind === info.kind
        ? JSON.stringify(this.obj)
        : JSON.stringify({ ...this.obj, apiVersion, kind: info.kind });
    // Nearly every resource is served in one version: keep the last one asked for.
    this.encoded = text;
    this.encodedAs = apiVersion;
    return text;
  }

  /** The same content with another resourceVersion (a DELETED event carries the delete's). */
  withRv(rv: number): CachedObject {
    return new CachedObject(
      { ...this.obj, metadata: { ...this.obj.metadata, resourceVersion: String(rv) } },
      rv,
    );
  }
}

const BTree = sortedBtree.default;

const compareKeys = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The objects of one resource (all versions share them), by key. */
export class ResourceCache {
  readonly tree = new BTree<string, CachedObject>(undefined, compareKeys);
  /** field → value → keys of the objects with that value. */
  private readonly indexes = new Map<string, Map<string, Set<string>>>();

  constructor(private readonly indexedFields: ReadonlyMap<string, (o: KubeObject) => string>) {
    for (const f of indexedFields.keys()) this.indexes.set(f, new Map());
  }

  get size(): number {
    return this.tree.size;
  }

  isIndexed(field: string): boolean {
    return this.indexes.has(field);
  }

  /** The values of the indexed fields of an object (for watcher dispatch). */
  indexedValues(obj: KubeObject): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (const [f, get] of this.indexedFields) out.push([f, get(obj)]);
    return out;
  }

  get(key: string): CachedObject | undefined {
    return this.tree.get(key);
  }

  set(key: string, entry: CachedObject): CachedObject | undefined {
    const old = this.tree.get(key);
    if (old) this.unindex(key, old);
    this.tree.set(key, entry);
    for (const [f, get] of this.indexedFields) {
      const byValue = this.indexes.get(f) as Map<string, Set<string>>;
      const v = get(entry.obj);
      let keys = byValue.get(v);
      if (!keys) byValue.set(v, (keys = new Set()));
      keys.add(key);
    }
    return old;
  }

  delete(key: string): CachedObject | undefined {
    const old = this.tree.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.tree.delete(key);
    return old;
  }

  private unindex(key: string, entry: CachedObject): void {
    for (const [f, get] of this.indexedFields) {
      const byValue = this.indexes.get(f) as Map<string, Set<string>>;
      const v = get(entry.obj);
      const keys = byValue.get(v);
      keys?.delete(key);
      if (keys && keys.size === 0) byValue.delete(v);
    }
  }

  /** Keys with `field` = `value`, in key order. */
  keysByField(field: string, value: string): string[] {
    const keys = this.indexes.get(field)?.get(value);
    return keys ? [...keys].sort(compareKeys) : [];
  }

  /** Entries whose key starts with `prefix` and is greater than `after`, in key order. */
  *scan(prefix: string, after?: string): Generator<[string, CachedObject]> {
    const start = after !== undefined && after >= prefix ? after : prefix;
    for (const pair of this.tree.entries(start)) {
      const key = pair[0];
      if (!key.startsWith(prefix)) {
        if (key > prefix) return;
        continue;
      }
      if (after !== undefined && key <= after) continue;
      yield [key, pair[1]];
    }
  }
}
