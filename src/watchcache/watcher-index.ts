/**
 * Which watchers can contain a key: the index the dispatcher asks once per event.
 *
 * - Exact keys: a Map from key to watchers. One lookup per event.
 * - Prefixes: one Map per prefix length in use, from prefix to watchers. An event key of length
 *   L costs one lookup per distinct prefix length <= L (Kubernetes-style layouts use a handful
 *   of lengths), never one per watcher.
 * - Other intervals (and "every key >= k"): an interval tree, O(log n + matches).
 *
 * `work` counts lookups and tree nodes examined, so a test can show that 10,000 watchers on
 * distinct keys cost O(1) per event.
 */

import { IntervalTree } from './interval-tree.js';
import type { KeyRangeKind } from './keys.js';

export interface Indexed {
  readonly range: KeyRangeKind;
}

export class WatcherIndex<W extends Indexed> {
  private readonly exact = new Map<string, Set<W>>();
  private readonly prefixes = new Map<number, Map<string, Set<W>>>();
  /** Distinct prefix lengths in use, ascending. */
  private prefixLengths: number[] = [];
  private readonly intervals = new IntervalTree<W>();
  private _size = 0;
  /** Units of matching work done so far (lookups + tree nodes examined). */
  work = 0;

  get size(): number {
    return this._size;
  }

  add(w: W): void {
    const r = w.range;
    switch (r.kind) {
      case 'key':
        addTo(this.exact, r.key, w);
        break;
      case 'prefix': {
        let byLength = this.prefixes.get(r.prefix.length);
        if (byLength === undefined) {
          byLength = new Map();
          this.prefixes.set(r.prefix.length, byLength);
          this.prefixLengths = [...this.prefixes.keys()].sort((a, b) => a - b);
        }
        addTo(byLength, r.prefix, w);
        break;
      }
      case 'interval':
        this.intervals.add(r.start, r.end, w);
        break;
    }
    this._size++;
  }

  remove(w: W): void {
    const r = w.range;
    let removed = false;
    switch (r.kind) {
      case 'key':
        removed = removeFrom(this.exact, r.key, w);
        break;
      case 'prefix': {
        const byLength = this.prefixes.get(r.prefix.length);
        if (byLength === undefined) break;
        removed = removeFrom(byLength, r.prefix, w);
        if (byLength.size === 0) {
          this.prefixes.delete(r.prefix.length);
          this.prefixLengths = [...this.prefixes.keys()].sort((a, b) => a - b);
        }
        break;
      }
      case 'interval':
        removed = this.intervals.remove(r.start, r.end, w);
        break;
    }
    if (removed) this._size--;
  }

  /** Calls `visit` once for each watcher whose range contains `key`. */
  forEachMatch(key: string, visit: (w: W) => void): void {
    this.work++;
    const exact = this.exact.get(key);
    if (exact !== undefined) for (const w of exact) visit(w);
    for (const len of this.prefixLengths) {
      if (len > key.length) break;
      this.work++;
      const set = this.prefixes.get(len)!.get(len === key.length ? key : key.slice(0, len));
      if (set !== undefined) for (const w of set) visit(w);
    }
    if (this.intervals.size > 0) this.work += this.intervals.stab(key, visit);
  }
}

function addTo<W>(map: Map<string, Set<W>>, key: string, w: W): void {
  let set = map.get(key);
  if (set === undefined) {
    set = new Set();
    map.set(key, set);
  }
  set.add(w);
}

function removeFrom<W>(map: Map<string, Set<W>>, key: string, w: W): boolean {
  const set = map.get(key);
  if (set === undefined || !set.delete(w)) return false;
  if (set.size === 0) map.delete(key);
  return true;
}
