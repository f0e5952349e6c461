/**
 * LevelRaftStorage: the durable RaftStorage, on three sublevels of a member's LevelDB
 * (`raft-log`, `raft-state`, `raft-snap`; encodings in ./disk-format.ts).
 *
 * Design: the core reads storage synchronously, so the whole uncompacted log and the
 * latest snapshot are mirrored in memory (a MemoryStorage, which also gives this class
 * MemoryStorage's exact read semantics) and every write goes to both. The price is memory
 * proportional to the uncompacted log plus one snapshot; the driver bounds it by taking
 * snapshots and compacting.
 *
 * The log is stored as segments, one record per appended run of entries (see
 * ./log-segments.ts), so a Ready of hundreds of entries is one record.
 *
 * Write rules:
 *   1. Each write method validates and updates the mirror synchronously (so a bad request
 *      throws before anything reaches disk), then queues ONE LevelDB batch. Batches are
 *      written strictly in call order; the returned promise resolves when the batch is on
 *      disk (fsynced when `sync` is set).
 *   2. `persist(ready)` writes a Ready's snapshot, entries and hard state in one atomic
 *      batch (group commit), fsynced when `ready.mustSync` or a snapshot is present.
 *      A Ready whose only change is the commit index writes nothing: the new hard state
 *      rides along with the next write (or `flush()`). Losing it in a crash is harmless,
 *      the commit index is relearned from the leader, and it halves a leader's batches.
 *   3. A failed disk write is fatal: the mirror is now ahead of disk, so every later write
 *      and every read fails with ERR_STORAGE. The member must stop and restart (which
 *      reloads what is really on disk).
 *   4. The log is never compacted past the latest snapshot (`compact` refuses), so a
 *      restart can always rebuild from snapshot + log. On reload the log starts right
 *      after the snapshot; entries kept in memory below it are not reloaded.
 *   5. Within a batch, deletes come before puts, so a record rewritten under the same key
 *      ends up with its new value.
 *   6. With a durable high-water mark (./durable-mark.ts), open() refuses a log
 *      that lost or changed an entry the mark covers, and every synced write that made
 *      more committed entries durable advances the mark after the write is on disk.
 */
import type { Level } from 'level';
import { EtceteraError } from '../../errors.js';
import {
  type ByteSize,
  type ConfState,
  type Entry,
  type HardState,
  LogIndex,
  type RaftStorage,
  type Ready,
  type Snapshot,
  type Term,
} from '../types.js';
import {
  decodeHardState,
  decodeLogKey,
  decodeSegment,
  decodeSnapshot,
  encodeHardState,
  encodeSegment,
  encodeSnapshot,
  logKey,
} from './disk-format.js';
import type { DurableMark } from './durable-mark.js';
import { SegmentIndex } from './log-segments.js';
import { MemoryStorage } from './memory-storage.js';

/** The member's database handle (any key/value defaults: raft uses its own encodings). */
// biome-ignore lint/suspicious/noExplicitAny: the member's db may use any default encodings
export type RaftDb = Level<any, any>;

type Sub = ReturnType<RaftDb['sublevel']>;
type Op =
  | { type: 'put'; sublevel: Sub; key: Uint8Array | string; value: Uint8Array }
  | { type: 'del'; sublevel: Sub; key: Uint8Array | string };

export interface LevelRaftStorageOptions {
  /**
   * Membership for a brand-new group. Used only when the database holds no Raft state:
   * recorded as a snapshot at index 0, as MemoryStorage.bootstrap does.
   */
  bootstrap?: ConfState;
  /** The member's durable high-water mark (rule 6); checked at open, advanced on writes. */
  mark?: DurableMark;
}

/** The parts of a Ready that storage persists. */
export type PersistableReady = Pick<Ready, 'hardState' | 'entries' | 'snapshot' | 'mustSync'>;

const HARD_KEY = 'hard';
const SNAP_KEY = 'snap';

export class LevelRaftStorage implements RaftStorage {
  private tail: Promise<void> = Promise.resolve();
  private failure: EtceteraError | undefined;
  /** Term and vote as last written: a hard state differing only in commit may wait. */
  private durableTermVote = '';
  /** A commit-only hard state not written yet (rule 2). */
  private deferredHard: HardState | undefined;
  /** Last index and hard-state term known on disk (a synced write resolved): rule 6. */
  private durableLast = 0;
  private durableTerm = 0;
  private mark: DurableMark | undefined;

  private constructor(
    private readonly db: RaftDb,
    private readonly log: Sub,
    private readonly state: Sub,
    private readonly snap: Sub,
    private readonly mirror: MemoryStorage,
    private readonly segments: SegmentIndex,
    /** True when open() found no Raft state (a new member). */
    readonly fresh: boolean,
  ) {}

  /** Opens (and on first use, bootstraps) the Raft state in `db`, which must be open. */
  static async open(db: RaftDb, options: LevelRaftStorageOptions = {}): Promise<LevelRaftStorage> {
    const view = { keyEncoding: 'view', valueEncoding: 'view' };
    const text = { keyEncoding: 'utf8', valueEncoding: 'view' };
    const log = db.sublevel<Uint8Array, Uint8Array>('raft-log', view) as unknown as Sub;
    const state = db.sublevel<string, Uint8Array>('raft-state', text) as unknown as Sub;
    const snap = db.sublevel<string, Uint8Array>('raft-snap', text) as unknown as Sub;
    const { mirror, segments, fresh } = await load(log, state, snap);
    const s = new LevelRaftStorage(db, log, state, snap, mirror, segments, fresh);
    if (!fresh) s.durableTermVote = termVote(mirror.initialState().hardState);
    s.durableLast = mirror.lastIndex();
    s.durableTerm = mirror.initialState().hardState.term;
    if (options.mark !== undefined) {
      checkMark(mirror, options.mark);
      s.mark = options.mark;
    }
    if (fresh && options.bootstrap !== undefined) {
      const boot = MemoryStorage.bootstrap(options.bootstrap).snapshot();
      s.mirror.applySnapshot(boot);
      await s.write([s.putSnap(boot)], true);
    }
    return s;
  }

  // --- RaftStorage (reads, from the mirror) ---

  initialState(): { hardState: HardState; confState: ConfState } {
    return this.healthy().initialState();
  }
  entries(lo: LogIndex, hi: LogIndex, maxBytes?: ByteSize): Entry[] {
    return this.healthy().entries(lo, hi, maxBytes);
  }
  term(i: LogIndex): Term {
    return this.healthy().term(i);
  }
  firstIndex(): LogIndex {
    return this.healthy().firstIndex();
  }
  lastIndex(): LogIndex {
    return this.healthy().lastIndex();
  }
  snapshot(): Snapshot {
    return this.healthy().snapshot();
  }

  // --- writes ---

  /** Group commit of one Ready: snapshot, entries and hard state in one batch (rule 2). */
  persist(rd: PersistableReady): Promise<void> {
    this.healthy();
    const ops: Op[] = [];
    if (rd.snapshot !== undefined) ops.push(...this.stageSnapshot(rd.snapshot));
    if (rd.entries.length > 0) ops.push(...this.stageAppend(rd.entries));
    const hs = rd.hardState ?? this.deferredHard;
    if (hs !== undefined) {
      if (ops.length === 0 && termVote(hs) === this.durableTermVote) {
        this.mirror.setHardState(hs);
        this.deferredHard = hs;
        // The newly committed entries may already be on disk: the mark can cover them.
        return this.tail.then(() => this.advanceMark());
      }
      ops.push(this.stageHardState(hs));
    }
    if (ops.length === 0) return this.tail;
    return this.write(ops, rd.mustSync || rd.snapshot !== undefined);
  }

  append(entries: readonly Entry[]): Promise<void> {
    this.healthy();
    return this.write(this.stageAppend(entries), true);
  }

  setHardState(hs: HardState): Promise<void> {
    this.healthy();
    return this.write([this.stageHardState(hs)], true);
  }

  /** Replace everything with a snapshot from the leader (ERR_RAFT_SNAPSHOT_OUT_OF_DATE if older). */
  applySnapshot(s: Snapshot): Promise<void> {
    this.healthy();
    return this.write(this.stageSnapshot(s), true);
  }

  /** Record an application snapshot at applied index `i` (see MemoryStorage.createSnapshot). */
  async createSnapshot(i: LogIndex, confState: ConfState, data: Uint8Array): Promise<Snapshot> {
    const s = this.healthy().createSnapshot(i, confState, data);
    // Not synced: losing it in a crash leaves the older snapshot plus the log, which
    // still covers it; and LevelDB makes it durable with the next synced write anyway
    // (its log is sequential), so a snapshot never costs a Ready an extra fsync.
    await this.write([this.putSnap(s)], false);
    return s;
  }

  /** Drop entries up to and including `i`, which must not pass the snapshot (rule 4). */
  compact(i: LogIndex): Promise<void> {
    const m = this.healthy();
    const snapIndex = m.snapshot().metadata.index;
    if (i > snapIndex) {
      throw new EtceteraError('ERR_RAFT_UNAVAILABLE', {
        detail: `compact index ${i} is past the snapshot at ${snapIndex}`,
      });
    }
    m.compact(i);
    const ops = this.segments.compact(i).map((k) => this.delLog(k));
    // Not synced: a compaction lost in a crash leaves dead records below the snapshot,
    // which load() skips and removes.
    return this.write(ops, false);
  }

  /**
   * Writes a deferred commit-only hard state (rule 2), then resolves when every write
   * queued so far is on disk and the mark is written (or rejects if one failed). Call
   * before closing the db.
   */
  async flush(): Promise<void> {
    const hs = this.deferredHard;
    if (hs === undefined || this.failure !== undefined) await this.tail;
    else await this.write([this.stageHardState(hs)], false);
    // The mark spaces its writes; one still waiting goes now.
    await this.mark?.flush();
  }

  /** flush(), then closes the mark's file. Call once, before closing the db. */
  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      await this.mark?.close();
    }
  }

  // --- staging: update the mirror, return the batch operations ---

  private stageAppend(entries: readonly Entry[]): Op[] {
    this.mirror.append(entries);
    const first = this.mirror.firstIndex();
    const live = entries[0]!.index >= first ? entries : entries.filter((e) => e.index >= first);
    if (live.length === 0) return [];
    const start = live[0]!.index;
    const plan = this.segments.append(start, live[live.length - 1]!.index, first);
    const ops: Op[] = plan.deletes.map((k) => this.delLog(k));
    const cut = plan.truncated;
    if (cut !== undefined) {
      const kept = this.mirror.entries(LogIndex(cut.start), LogIndex(cut.end + 1));
      ops.push(this.putSegment(kept));
    }
    ops.push(this.putSegment(live));
    return ops;
  }

  private stageSnapshot(s: Snapshot): Op[] {
    this.mirror.applySnapshot(s);
    const ops: Op[] = this.segments.clear().map((k) => this.delLog(k));
    ops.push(this.putSnap(s));
    return ops;
  }

  private stageHardState(hs: HardState): Op {
    this.mirror.setHardState(hs);
    this.deferredHard = undefined;
    this.durableTermVote = termVote(hs);
    return { type: 'put', sublevel: this.state, key: HARD_KEY, value: encodeHardState(hs) };
  }

  private putSegment(entries: readonly Entry[]): Op {
    const key = logKey(entries[0]!.index);
    return { type: 'put', sublevel: this.log, key, value: encodeSegment(entries) };
  }
  private delLog(start: number): Op {
    return { type: 'del', sublevel: this.log, key: logKey(LogIndex(start)) };
  }
  private putSnap(s: Snapshot): Op {
    return { type: 'put', sublevel: this.snap, key: SNAP_KEY, value: encodeSnapshot(s) };
  }

  private write(ops: Op[], sync: boolean): Promise<void> {
    const last = this.mirror.lastIndex();
    const term = this.mirror.initialState().hardState.term;
    const run = async (): Promise<void> => {
      this.healthy();
      try {
        // biome-ignore lint/suspicious/noExplicitAny: sublevel ops are typed per sublevel
        await this.db.batch(ops as any[], { sync });
      } catch (cause) {
        this.failure = new EtceteraError('ERR_STORAGE', { detail: 'raft log write' }, { cause });
        throw this.failure;
      }
      if (sync) {
        // A synced batch makes it and every earlier batch durable (LevelDB's log is
        // sequential), so everything staged before this write is now on disk.
        this.durableLast = last;
        this.durableTerm = term;
        this.advanceMark();
      }
    };
    this.tail = this.tail.then(run);
    return this.tail;
  }

  /** Rule 6: the mark covers committed entries that a synced write put on disk. */
  private advanceMark(): void {
    const mark = this.mark;
    if (mark === undefined || this.failure !== undefined) return;
    const markError = mark.error;
    if (markError !== undefined) {
      this.failure = markError;
      return;
    }
    const upto = Math.min(this.mirror.initialState().hardState.commit, this.durableLast);
    const snap = this.mirror.snapshot().metadata;
    // Below the first stored entry the term is gone; the mark simply waits for later ones.
    if (upto < this.mirror.firstIndex() - 1 || upto < snap.index) {
      mark.advance({ index: mark.value.index, term: mark.value.term, hardTerm: this.durableTerm });
      return;
    }
    const term = upto === 0 ? 0 : this.mirror.term(LogIndex(upto));
    mark.advance({ index: upto, term, hardTerm: this.durableTerm });
  }

  private healthy(): MemoryStorage {
    if (this.failure !== undefined) throw this.failure;
    return this.mirror;
  }
}

/**
 * Rule 6 at open: every entry the mark says was durable and committed must still be there
 * with its term (or lie under the snapshot), and the hard state must not have gone back to
 * an older term.
 */
function checkMark(mirror: MemoryStorage, mark: DurableMark): void {
  const m = mark.loaded;
  const hs = mirror.initialState().hardState;
  const snap = mirror.snapshot().metadata;
  const lost = (what: string) =>
    new EtceteraError('ERR_DATA_CORRUPT', {
      detail: `raft log: ${what} (durable high-water mark ${mark.path}: entry ${m.index} of term ${m.term}, hard-state term ${m.hardTerm})`,
    });
  if (hs.term < m.hardTerm) throw lost(`the hard state is at term ${hs.term}`);
  if (m.index === 0 || m.index < snap.index) return;
  if (m.index === snap.index) {
    if (snap.term !== m.term) throw lost(`the snapshot at ${snap.index} has term ${snap.term}`);
    return;
  }
  const last = mirror.lastIndex();
  if (last < m.index) {
    throw lost(`the log ends at entry ${last}: entries ${last + 1}..${m.index} are lost`);
  }
  const term = mirror.term(LogIndex(m.index));
  if (term !== m.term) throw lost(`entry ${m.index} has term ${term}`);
}

async function load(
  log: Sub,
  state: Sub,
  snap: Sub,
): Promise<{ mirror: MemoryStorage; segments: SegmentIndex; fresh: boolean }> {
  const mirror = new MemoryStorage();
  const segments = new SegmentIndex();
  const [hardBytes, snapBytes] = await Promise.all([
    state.get(HARD_KEY) as Promise<Uint8Array | undefined>,
    snap.get(SNAP_KEY) as Promise<Uint8Array | undefined>,
  ]);
  if (snapBytes !== undefined) mirror.applySnapshot(decodeSnapshot(snapBytes));
  const after = mirror.snapshot().metadata.index;
  const entries: Entry[] = [];
  const dead: Uint8Array[] = [];
  let records = 0;
  for await (const [key, value] of log.iterator() as AsyncIterable<[Uint8Array, Uint8Array]>) {
    records++;
    const start = decodeLogKey(key);
    const seg = decodeSegment(start, value);
    const end = start + seg.length - 1;
    if (end <= after) {
      dead.push(key); // wholly below the snapshot: a compaction lost in a crash
      continue;
    }
    const expected = entries.length === 0 ? after + 1 : entries[entries.length - 1]!.index + 1;
    const startOk = entries.length === 0 ? start <= expected : start === expected;
    if (!startOk) throw corrupt(`log segment at ${start} where ${expected} was expected`);
    segments.load({ start, end });
    for (const e of seg) if (e.index > after) entries.push(e);
  }
  // Rule 5 order does not matter here: nothing else is written in this batch.
  if (dead.length > 0) await log.batch(dead.map((key) => ({ type: 'del' as const, key })) as never);
  mirror.append(entries);
  if (hardBytes !== undefined) {
    const hs = decodeHardState(hardBytes);
    if (hs.commit > mirror.lastIndex()) {
      throw corrupt(`commit ${hs.commit} is past the last entry ${mirror.lastIndex()}`);
    }
    mirror.setHardState(hs);
  }
  const fresh = hardBytes === undefined && snapBytes === undefined && records === 0;
  return { mirror, segments, fresh };
}

function termVote(hs: HardState): string {
  return `${hs.term}/${hs.vote}`;
}

function corrupt(detail: string): EtceteraError {
  return new EtceteraError('ERR_CORRUPT', { detail: `raft storage: ${detail}` });
}
