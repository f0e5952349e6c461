/**
 * MemoryStorage: a RaftStorage kept entirely in memory, with the write methods a driver
 * uses (append, setHardState, applySnapshot, createSnapshot, compact). Every raft test and
 * the simulator use it; in the simulator it plays the member's disk, so whatever was
 * written here survives a simulated crash.
 *
 * Layout invariants:
 *   1. `ents[0]` is a dummy entry carrying the snapshot's (index, term); it is never
 *      returned as an entry. So `firstIndex() = ents[0].index + 1`.
 *   2. `ents[k].index = ents[0].index + k` (contiguous, no gaps).
 *   3. `snap.metadata.index <= ents[0].index` (compaction without a new snapshot is
 *      allowed to run ahead of `createSnapshot` only through `compact`).
 */
import { EtceteraError } from '../../errors.js';
import {
  type ByteSize,
  type ConfState,
  type Entry,
  EntryType,
  type HardState,
  LogIndex,
  NONE,
  type RaftStorage,
  type Snapshot,
  Term,
} from '../types.js';
import { EMPTY_BYTES, limitSize } from '../util.js';

const EMPTY_CONF: ConfState = { voters: [], learners: [] };

export class MemoryStorage implements RaftStorage {
  private hardState: HardState = { term: Term(0), vote: NONE, commit: LogIndex(0) };
  private snap: Snapshot = {
    metadata: { index: LogIndex(0), term: Term(0), confState: EMPTY_CONF },
    data: EMPTY_BYTES,
  };
  private ents: Entry[] = [dummy(LogIndex(0), Term(0))];

  /**
   * A storage for a brand-new member: empty log, and the membership recorded as if by a
   * snapshot at index 0. For the founding members of a group that is the initial
   * membership. A member joining an existing group must be given the membership that
   * already includes it (as the learner or voter it was added as): the log it then
   * receives from the leader does not contain the founding membership, and replaying the
   * later changes on top of the current membership converges to the same result.
   */
  static bootstrap(confState: ConfState): MemoryStorage {
    const s = new MemoryStorage();
    s.snap = { metadata: { index: LogIndex(0), term: Term(0), confState }, data: EMPTY_BYTES };
    return s;
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: this.hardState, confState: this.snap.metadata.confState };
  }

  entries(lo: LogIndex, hi: LogIndex, maxBytes?: ByteSize): Entry[] {
    const offset = this.ents[0]!.index;
    if (lo <= offset) throw new EtceteraError('ERR_RAFT_COMPACTED', { detail: `index ${lo}` });
    if (hi > this.lastIndex() + 1 || lo > hi) {
      throw new EtceteraError('ERR_RAFT_UNAVAILABLE', { detail: `range [${lo}, ${hi})` });
    }
    return limitSize(this.ents.slice(lo - offset, hi - offset), maxBytes);
  }

  term(i: LogIndex): Term {
    const offset = this.ents[0]!.index;
    if (i < offset) throw new EtceteraError('ERR_RAFT_COMPACTED', { detail: `index ${i}` });
    const e = this.ents[i - offset];
    if (e === undefined) throw new EtceteraError('ERR_RAFT_UNAVAILABLE', { detail: `index ${i}` });
    return e.term;
  }

  firstIndex(): LogIndex {
    return LogIndex(this.ents[0]!.index + 1);
  }

  lastIndex(): LogIndex {
    return LogIndex(this.ents[0]!.index + this.ents.length - 1);
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  // --- writes (the driver's side) ---

  setHardState(hs: HardState): void {
    this.hardState = hs;
  }

  /**
   * Replace the whole state with a snapshot received from the leader. Refuses a snapshot
   * older than the current one (ERR_RAFT_SNAPSHOT_OUT_OF_DATE).
   */
  applySnapshot(snap: Snapshot): void {
    if (snap.metadata.index < this.snap.metadata.index) {
      throw new EtceteraError('ERR_RAFT_SNAPSHOT_OUT_OF_DATE');
    }
    this.snap = snap;
    this.ents = [dummy(snap.metadata.index, snap.metadata.term)];
  }

  /**
   * Record an application snapshot taken at applied index `i` (which must be stored), so
   * the leader can send it to followers that fell behind compaction. `confState` is the
   * membership as of `i`. Does not compact: call `compact` afterwards if wanted.
   */
  createSnapshot(i: LogIndex, confState: ConfState, data: Uint8Array): Snapshot {
    if (i <= this.snap.metadata.index) throw new EtceteraError('ERR_RAFT_SNAPSHOT_OUT_OF_DATE');
    if (i > this.lastIndex()) {
      throw new EtceteraError('ERR_RAFT_UNAVAILABLE', { detail: `snapshot index ${i}` });
    }
    this.snap = { metadata: { index: i, term: this.term(i), confState }, data };
    return this.snap;
  }

  /**
   * Drop entries up to and including `compactIndex` (it becomes the dummy). The
   * application must not compact past its applied index, nor past its latest snapshot if
   * it wants lagging followers to catch up by snapshot.
   */
  compact(compactIndex: LogIndex): void {
    const offset = this.ents[0]!.index;
    if (compactIndex <= offset) throw new EtceteraError('ERR_RAFT_COMPACTED');
    if (compactIndex > this.lastIndex()) {
      throw new EtceteraError('ERR_RAFT_UNAVAILABLE', { detail: `compact index ${compactIndex}` });
    }
    const i = compactIndex - offset;
    this.ents = [dummy(compactIndex, this.ents[i]!.term), ...this.ents.slice(i + 1)];
  }

  /**
   * Append entries from a Ready. Entries at or below the compacted prefix are skipped; an
   * entry at an index already stored replaces it and everything after it (the new leader's
   * log wins). A gap after the last index is a driver bug and throws.
   */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = this.firstIndex();
    const lastNew = entries[entries.length - 1]!.index;
    if (lastNew < first) return;
    const ents = first > entries[0]!.index ? entries.slice(first - entries[0]!.index) : entries;
    const offset = ents[0]!.index - this.ents[0]!.index;
    if (offset > this.ents.length) {
      throw new EtceteraError('ERR_RAFT_UNAVAILABLE', {
        detail: `missing log entry [last: ${this.lastIndex()}, append at: ${ents[0]!.index}]`,
      });
    }
    this.ents = this.ents.slice(0, offset).concat(ents);
  }
}

function dummy(index: LogIndex, term: Term): Entry {
  return { index, term, type: EntryType.Normal, data: EMPTY_BYTES };
}
