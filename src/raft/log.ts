/**
 * RaftLog: the member's log as the core sees it, stable entries in storage followed by
 * unstable ones (not yet confirmed durable), with the commit and apply cursors.
 *
 * Invariants (checked where data enters, trusted inside):
 *   1. snapshotIndex <= applied <= committed <= lastIndex.
 *   2. Indexes below `unstable.offset` are read from storage, the rest from `unstable`.
 *   3. Committed entries are never truncated (`append` refuses to go below `committed`).
 *   4. Only stable entries are handed out to apply: an entry is applied on this member only
 *      after it is durable here, so a restart can never find applied state ahead of its log.
 *
 * A worked example (a follower): storage holds 1..5 (stable), a leader sends 6..8 → unstable
 * [6,7,8], offset 6. ready() hands out 6..8 to persist; meanwhile a new leader's append at 7
 * with a higher term replaces 7..8 → unstable [6,7',8']. advance() tries stableTo(8, old
 * term): the term differs, so nothing is marked stable and the next Ready carries 6,7',8'
 * again; the driver's append truncates the stored 7..8 and writes the new ones.
 */
import { EtceteraError } from '../errors.js';
import {
  type ByteSize,
  type Entry,
  LogIndex,
  type RaftStorage,
  type Snapshot,
  Term,
} from './types.js';
import { Unstable } from './unstable.js';
import { invariant, limitSize } from './util.js';

export class RaftLog {
  readonly storage: RaftStorage;
  readonly unstable: Unstable;
  /** Highest index known to be stored on a quorum. */
  committed: LogIndex;
  /** Highest index handed out to the application and acknowledged by advance(). */
  applied: LogIndex;
  /** Cap on the bytes of committed entries per Ready. */
  private readonly maxApplyBytes: ByteSize;

  constructor(storage: RaftStorage, maxApplyBytes: ByteSize, applied?: LogIndex) {
    this.storage = storage;
    this.maxApplyBytes = maxApplyBytes;
    this.unstable = new Unstable(LogIndex(storage.lastIndex() + 1));
    const snapIndex = LogIndex(storage.firstIndex() - 1);
    const hs = storage.initialState().hardState;
    this.committed = LogIndex(Math.max(snapIndex, hs.commit));
    this.applied = LogIndex(Math.max(snapIndex, applied ?? 0));
    invariant(this.applied <= this.committed, `applied ${this.applied} > commit ${this.committed}`);
    invariant(this.committed <= this.lastIndex(), `commit ${this.committed} past last index`);
  }

  firstIndex(): LogIndex {
    return this.unstable.maybeFirstIndex() ?? this.storage.firstIndex();
  }

  lastIndex(): LogIndex {
    return this.unstable.maybeLastIndex() ?? this.storage.lastIndex();
  }

  /** The last index that is durable (stable) here. */
  stableLastIndex(): LogIndex {
    // A pending snapshot replaces everything: nothing here is usable until it is stored.
    if (this.unstable.snapshot !== undefined) return LogIndex(0);
    if (this.unstable.entries.length > 0) return LogIndex(this.unstable.offset - 1);
    return this.storage.lastIndex();
  }

  /** Term of entry i, or undefined when i is compacted away or past the end. */
  term(i: LogIndex): Term | undefined {
    const dummy = this.firstIndex() - 1;
    if (i < dummy || i > this.lastIndex()) return undefined;
    return this.unstable.maybeTerm(i) ?? this.storage.term(i);
  }

  lastTerm(): Term {
    return this.term(this.lastIndex()) ?? Term(0);
  }

  matchTerm(i: LogIndex, t: Term): boolean {
    return this.term(i) === t;
  }

  /**
   * The follower side of an append: if our entry at `index` has `logTerm`, make `ents`
   * follow it (replacing a conflicting suffix), learn `commit`, and return the last index
   * now matching the leader. Undefined: the logs do not match at `index`.
   */
  maybeAppend(index: LogIndex, logTerm: Term, commit: LogIndex, ents: readonly Entry[]) {
    if (!this.matchTerm(index, logTerm)) return undefined;
    const lastNew = LogIndex(index + ents.length);
    const ci = this.findConflict(ents);
    if (ci !== 0) {
      invariant(ci > this.committed, `entry ${ci} conflicts with committed ${this.committed}`);
      this.append(ents.slice(ci - (index + 1)));
    }
    this.commitTo(LogIndex(Math.min(commit, lastNew)));
    return lastNew;
  }

  append(ents: readonly Entry[]): LogIndex {
    if (ents.length === 0) return this.lastIndex();
    invariant(ents[0]!.index > this.committed, `append at ${ents[0]!.index} below commit`);
    this.unstable.truncateAndAppend(ents);
    return this.lastIndex();
  }

  /**
   * The index of the first entry of `ents` that is new or disagrees with ours (0 if all
   * are already here). Entries are contiguous and ours agree up to the one before.
   */
  findConflict(ents: readonly Entry[]): number {
    for (const e of ents) if (!this.matchTerm(e.index, e.term)) return e.index;
    return 0;
  }

  /**
   * The fast back-off hint: the largest index <= `index` whose term is <= `term`, with that
   * term. The leader can then skip every entry of a term the other side does not have.
   * Returns term 0 when the walk runs into the compacted prefix.
   */
  findConflictByTerm(index: LogIndex, term: Term): [LogIndex, Term] {
    let i = index;
    for (;;) {
      const t = this.term(i);
      if (t === undefined) return [i, Term(0)];
      if (t <= term) return [i, t];
      i = LogIndex(i - 1);
    }
  }

  /** Candidate's log (lastIndex, lastTerm) at least as up to date as ours (§5.4.1). */
  isUpToDate(index: LogIndex, term: Term): boolean {
    const lt = this.lastTerm();
    return term > lt || (term === lt && index >= this.lastIndex());
  }

  commitTo(c: LogIndex): void {
    if (c <= this.committed) return;
    invariant(c <= this.lastIndex(), `commit ${c} past last index ${this.lastIndex()}`);
    this.committed = c;
  }

  appliedTo(i: LogIndex): void {
    if (i === 0 || i <= this.applied) return;
    invariant(i <= this.committed, `applied ${i} past commit ${this.committed}`);
    this.applied = i;
  }

  stableTo(i: LogIndex, t: Term): void {
    this.unstable.stableTo(i, t);
  }

  stableSnapTo(i: LogIndex): void {
    this.unstable.stableSnapTo(i);
  }

  /** Replace the whole log with a snapshot (a follower that fell behind compaction). */
  restore(s: Snapshot): void {
    this.committed = s.metadata.index;
    this.unstable.restore(s);
  }

  /** Entries from `lo` to the end, at most `maxBytes` (at least one). */
  entriesFrom(lo: LogIndex, maxBytes?: ByteSize): Entry[] {
    if (lo > this.lastIndex()) return [];
    return this.slice(lo, LogIndex(this.lastIndex() + 1), maxBytes);
  }

  /** Whether committed-but-unapplied stable entries are waiting. */
  hasNextCommittedEntries(): boolean {
    if (this.unstable.snapshot !== undefined) return false;
    return this.applied < Math.min(this.committed, this.stableLastIndex());
  }

  /** The committed, stable entries not yet applied, capped by maxCommittedSizePerReady. */
  nextCommittedEntries(): Entry[] {
    if (!this.hasNextCommittedEntries()) return [];
    const lo = LogIndex(Math.max(this.applied + 1, this.firstIndex()));
    const hi = LogIndex(Math.min(this.committed, this.stableLastIndex()) + 1);
    return this.slice(lo, hi, this.maxApplyBytes);
  }

  /**
   * Entries in [lo, hi), from storage then unstable, cut at `maxBytes` (at least one).
   * Throws ERR_RAFT_COMPACTED if lo is compacted: callers that can meet that (the leader
   * replicating to a lagging follower) check `firstIndex()` first.
   */
  slice(lo: LogIndex, hi: LogIndex, maxBytes?: ByteSize): Entry[] {
    if (lo < this.firstIndex()) throw new EtceteraError('ERR_RAFT_COMPACTED');
    invariant(lo <= hi && hi <= this.lastIndex() + 1, `slice [${lo}, ${hi}) out of bounds`);
    if (lo === hi) return [];
    const off = this.unstable.offset;
    let out: Entry[] = [];
    if (lo < off) {
      const stored = this.storage.entries(lo, LogIndex(Math.min(hi, off)), maxBytes);
      // A short read means the byte budget is spent, or storage was cut under us.
      if (stored.length < Math.min(hi, off) - lo) return stored;
      out = stored;
    }
    if (hi > off) {
      const u = this.unstable.slice(LogIndex(Math.max(lo, off)), hi);
      out = out.length > 0 ? out.concat(u) : u;
    }
    return limitSize(out, maxBytes);
  }
}
