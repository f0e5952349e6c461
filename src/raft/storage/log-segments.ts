/**
 * Where the durable log's records lie: the log is stored as segments, one LevelDB record
 * per appended run of entries (normally one per Ready), keyed by the index of its first
 * entry. Group commit then costs one record per Ready instead of one per entry, which is
 * what makes fsynced batches of hundreds of small proposals cheap.
 *
 * Invariants of `segs` (sorted by start):
 *   1. Segments are disjoint and contiguous: segs[k+1].start = segs[k].end + 1.
 *   2. Every stored entry above the snapshot lies in exactly one segment. The first
 *      segment may start at or below the snapshot index (its older entries are dead and
 *      skipped on load); it is deleted once compaction passes its end.
 * This class only plans: it says which records to delete and which to rewrite; the storage
 * encodes them from its in-memory mirror.
 */

export interface Segment {
  start: number;
  end: number;
}

export interface AppendPlan {
  /** Records (by start index) to delete. */
  deletes: number[];
  /** A segment cut short by the append: rewrite it as [start, end] (deleting the old key). */
  truncated?: Segment & { oldStart: number };
}

export class SegmentIndex {
  private segs: Segment[] = [];

  /** Records a segment read from disk, in key order (load checks invariant 1). */
  load(seg: Segment): void {
    this.segs.push(seg);
  }

  get segments(): readonly Segment[] {
    return this.segs;
  }

  /**
   * Plans storing entries [start, end], replacing any stored entry at or after `start`.
   * `firstLive` is the first index not compacted away: a cut segment keeps only live
   * entries, so that it can be re-encoded from memory.
   */
  append(start: number, end: number, firstLive: number): AppendPlan {
    const plan: AppendPlan = { deletes: [] };
    const kept: Segment[] = [];
    for (const s of this.segs) {
      if (s.end < start) kept.push(s);
      else if (s.start >= start) plan.deletes.push(s.start);
      else {
        const from = Math.max(s.start, firstLive);
        plan.deletes.push(s.start);
        if (from <= start - 1) {
          plan.truncated = { oldStart: s.start, start: from, end: start - 1 };
          kept.push({ start: from, end: start - 1 });
        }
      }
    }
    kept.push({ start, end });
    this.segs = kept;
    return plan;
  }

  /** Drops segments wholly at or below `index`; returns their record keys. */
  compact(index: number): number[] {
    const gone = this.segs.filter((s) => s.end <= index).map((s) => s.start);
    this.segs = this.segs.filter((s) => s.end > index);
    return gone;
  }

  /** Drops every segment (a snapshot replaced the log); returns their record keys. */
  clear(): number[] {
    const gone = this.segs.map((s) => s.start);
    this.segs = [];
    return gone;
  }
}
