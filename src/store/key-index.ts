/**
 * The in-memory index of live keys, used only by the apply path.
 *
 * It maps every key that currently exists to its metadata (createRevision, modRevision,
 * version, lease): everything apply needs to decide a put, a delete or a non-VALUE compare
 * without touching the disk. Values stay in LevelDB. Reads from clients never use it: they go
 * to a LevelDB snapshot, so they see one consistent revision while apply runs ahead.
 *
 * Worked example for key "a":
 *   put a @2        → a: {create 2, mod 2, version 1}
 *   put a @5        → a: {create 2, mod 5, version 2}
 *   delete a @6     → (absent)                 hist keeps @2, @5 and a tombstone @6
 *   put a @9        → a: {create 9, mod 9, version 1}   a new generation
 *
 * The index is rebuilt from the kv sublevel on open, so it never needs its own persistence.
 * Keys are latin1 strings (one char per byte) so that string order is byte order.
 */
import sortedBtree from 'sorted-btree';
import type { LeaseId, Revision } from './types.js';

const BTree = sortedBtree.default;

export interface KeyMeta {
  createRevision: Revision;
  modRevision: Revision;
  version: number;
  lease: LeaseId;
}

export class KeyIndex {
  private readonly tree = new BTree<string, KeyMeta>();

  get size(): number {
    return this.tree.size;
  }

  get(key: string): KeyMeta | undefined {
    return this.tree.get(key);
  }

  set(key: string, meta: KeyMeta): void {
    this.tree.set(key, meta);
  }

  delete(key: string): void {
    this.tree.delete(key);
  }

  clear(): void {
    this.tree.clear();
  }

  /**
   * Live keys in [start, end), or every key >= start when end is undefined, in key order.
   * The callback may not modify the index; collect first, then change.
   */
  forEachInRange(
    start: string,
    end: string | undefined,
    fn: (key: string, meta: KeyMeta) => void,
  ): void {
    if (end !== undefined && end <= start) return;
    if (end === undefined) {
      const max = this.tree.maxKey();
      if (max === undefined || max < start) return;
      this.tree.forRange(start, max, true, fn);
      return;
    }
    this.tree.forRange(start, end, false, fn);
  }

  /** Live keys in a range, collected into an array. */
  keysInRange(start: string, end: string | undefined): string[] {
    const out: string[] = [];
    this.forEachInRange(start, end, (k) => out.push(k));
    return out;
  }
}
