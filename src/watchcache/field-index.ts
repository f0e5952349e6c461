/**
 * Watchers found by a field of the value instead of by key: the index for selectors like
 * Kubernetes' `fieldSelector=spec.nodeName=n1`, where ten thousand watchers share one key
 * prefix and each wants the objects of one value.
 *
 * A wire layer describes the field once ({@link IndexedField}: which keys have it and how to
 * read it from an event, typically from a decoding it caches on the window entry anyway) and
 * adds each watcher with the value it selects. The dispatcher then asks, per event, for the
 * watchers of the event's value before and after the change: one map lookup each, never a
 * scan of the watchers. A watcher with a field selection gets exactly the events of its range
 * whose old or new value is its value (so an object that leaves the value is seen leaving),
 * in catch-up and live alike.
 */

import { bytesToLatin1 } from '../wire/bytes.js';
import { type KeyRangeKind, rangeContains } from './keys.js';
import type { WindowEntry } from './types.js';

/** A field watchers can be indexed by. Compared by identity: make one per field and keep it. */
export interface IndexedField {
  /** Only keys starting with this prefix carry the field. */
  readonly prefix: string;
  /**
   * The field's value in event `index` of `entry`: after the change (`before` false; a delete
   * has none) or before it (from its prevKv). Undefined when the value has no such field or
   * cannot be read. Must not block; called inside the dispatch turn.
   */
  valueOf(entry: WindowEntry, index: number, before: boolean): string | undefined;
}

/** A watcher's field selection: the events whose old or new value of `field` is `value`. */
export interface FieldSelection {
  readonly field: IndexedField;
  readonly value: string;
}

export interface FieldIndexed {
  readonly range: KeyRangeKind;
  readonly field: FieldSelection | null;
}

/** Whether event `index` of `entry` has `sel.value` before or after the change. */
export function selectsEvent(sel: FieldSelection, entry: WindowEntry, index: number): boolean {
  const key = bytesToLatin1(entry.batch.events[index]!.kv.key);
  if (!key.startsWith(sel.field.prefix)) return false;
  return (
    sel.field.valueOf(entry, index, false) === sel.value ||
    sel.field.valueOf(entry, index, true) === sel.value
  );
}

export class FieldIndex<W extends FieldIndexed> {
  private readonly byField = new Map<IndexedField, Map<string, Set<W>>>();
  private _size = 0;
  /** Units of matching work done so far (one per lookup). */
  work = 0;

  get size(): number {
    return this._size;
  }

  add(w: W): void {
    const sel = w.field!;
    let byValue = this.byField.get(sel.field);
    if (byValue === undefined) {
      byValue = new Map();
      this.byField.set(sel.field, byValue);
    }
    let set = byValue.get(sel.value);
    if (set === undefined) {
      set = new Set();
      byValue.set(sel.value, set);
    }
    set.add(w);
    this._size++;
  }

  remove(w: W): void {
    const sel = w.field!;
    const byValue = this.byField.get(sel.field);
    const set = byValue?.get(sel.value);
    if (set === undefined || !set.delete(w)) return;
    this._size--;
    if (set.size > 0) return;
    byValue!.delete(sel.value);
    if (byValue!.size === 0) this.byField.delete(sel.field);
  }

  /**
   * Calls `visit` once for each watcher whose range contains event `index`'s key and whose
   * value is the event's value before or after the change.
   */
  forEachMatch(entry: WindowEntry, index: number, key: string, visit: (w: W) => void): void {
    if (this.byField.size === 0) return;
    for (const [field, byValue] of this.byField) {
      if (!key.startsWith(field.prefix)) continue;
      const after = field.valueOf(entry, index, false);
      const before = field.valueOf(entry, index, true);
      this.visitValue(byValue, after, key, visit);
      if (before !== after) this.visitValue(byValue, before, key, visit);
    }
  }

  private visitValue(
    byValue: Map<string, Set<W>>,
    value: string | undefined,
    key: string,
    visit: (w: W) => void,
  ): void {
    if (value === undefined) return;
    this.work++;
    const set = byValue.get(value);
    if (set === undefined) return;
    for (const w of set) if (rangeContains(w.range, key)) visit(w);
  }
}
