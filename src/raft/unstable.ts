/**
 * The part of the log not yet known durable: an incoming snapshot and/or entries the
 * driver has not yet confirmed (through `advance()`) as written to storage.
 *
 * Invariants:
 *   1. `entries[k].index === offset + k` (contiguous).
 *   2. With a snapshot, `offset === snapshot.metadata.index + 1` at the time it was set
 *      (entries appended after the snapshot follow it directly).
 *   3. Every index below `offset` (and above the snapshot, if any) is in storage.
 */
import type { Entry, LogIndex, Snapshot, Term } from './types.js';
import { LogIndex as toIndex } from './types.js';

export class Unstable {
  snapshot: Snapshot | undefined = undefined;
  entries: Entry[] = [];
  offset: LogIndex;

  constructor(offset: LogIndex) {
    this.offset = offset;
  }

  /** First index if a snapshot is pending (the log then starts after it). */
  maybeFirstIndex(): LogIndex | undefined {
    return this.snapshot === undefined ? undefined : toIndex(this.snapshot.metadata.index + 1);
  }

  maybeLastIndex(): LogIndex | undefined {
    if (this.entries.length > 0) return toIndex(this.offset + this.entries.length - 1);
    return this.snapshot?.metadata.index;
  }

  maybeTerm(i: LogIndex): Term | undefined {
    if (i < this.offset) {
      const m = this.snapshot?.metadata;
      return m !== undefined && m.index === i ? m.term : undefined;
    }
    return this.entries[i - this.offset]?.term;
  }

  /**
   * The driver persisted entries up to (i, t). Drop them from here, unless the entry at i
   * has since been replaced (different term) or was never here: then nothing is stable yet
   * and the replacement goes out in the next Ready.
   */
  stableTo(i: LogIndex, t: Term): void {
    if (i < this.offset || this.maybeTerm(i) !== t) return;
    this.entries = this.entries.slice(i + 1 - this.offset);
    this.offset = toIndex(i + 1);
  }

  stableSnapTo(i: LogIndex): void {
    if (this.snapshot !== undefined && this.snapshot.metadata.index === i) {
      this.snapshot = undefined;
    }
  }

  restore(s: Snapshot): void {
    this.offset = toIndex(s.metadata.index + 1);
    this.entries = [];
    this.snapshot = s;
  }

  /**
   * Append `ents` (contiguous, non-empty), replacing any entries from `ents[0].index` on.
   * When the replaced range starts below `offset` the storage copy is overridden too: the
   * driver's append truncates it when it persists this Ready.
   */
  truncateAndAppend(ents: readonly Entry[]): void {
    const from = ents[0]!.index;
    if (from === this.offset + this.entries.length) {
      for (const e of ents) this.entries.push(e);
    } else if (from <= this.offset) {
      this.offset = from;
      this.entries = ents.slice();
    } else {
      this.entries = this.entries.slice(0, from - this.offset).concat(ents);
    }
  }

  /** Entries in [lo, hi); the caller has checked lo >= offset and hi <= last + 1. */
  slice(lo: LogIndex, hi: LogIndex): Entry[] {
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}
