/**
 * The MVCC store: durable apply of commands, consistent reads, history and events.
 *
 * Two ways to drive it:
 *   - `applyBatch(entries)`: a member feeds it committed Raft entries with their log indexes.
 *   - `submit(command)` and the conveniences in embedded.ts: a standalone store numbers the
 *     commands itself. Use one way or the other on a given store, never both.
 *
 * Durability: the LevelDB operations of every command in a batch, together with the
 * revision, the compaction revision and the applied index, go to disk in one atomic write
 * (fsynced unless `sync: false`). Results and events are released only after that write, so
 * an acknowledged write survives a crash and a reopened store resumes at exactly the applied
 * index it reports.
 */

import { EtceteraError, isEtceteraError } from '../errors.js';
import { bytesToLatin1 } from '../wire/bytes.js';
import { AlarmSet, META_ALARMS } from './alarms.js';
import { AuthStore, META_AUTH } from './auth.js';
import { CommandApplier, type CommandApplierState, readsPast } from './command-applier.js';
import { Compactor } from './compactor.js';
import { type BatchOp, openLevel, type Snapshot, type StoreDb, storeDb } from './db.js';
import { decodeKvMeta, readU64, u64 } from './encoding.js';
import { KeyIndex } from './key-index.js';
import { Lessor } from './lessor.js';
import {
  historyAt,
  META_APPLIED,
  META_COMPACT,
  META_COMPACT_DONE,
  META_REVISION,
  READ_CHUNK,
  type ReadPoint,
  rangeAt,
  rangeStreamAt,
  readMetaNumber,
} from './reader.js';
import { exportRecords, restoreOps } from './snapshot.js';
import type {
  Alarm,
  AppliedIndex,
  Clock,
  Command,
  CommandResult,
  EventBatch,
  KeyRange,
  KeyValue,
  LeaseId,
  RangeRequest,
  RangeResult,
  Revision,
  WatchableStore,
} from './types.js';
import {
  APPLY_LIMITS,
  checkCommand,
  checkRange,
  DEFAULT_MAX_REQUEST_BYTES,
  DEFAULT_MAX_TXN_OPS,
  type Limits,
} from './validate.js';

export interface StoreOptions {
  /** Directory of the LevelDB database (the store opens and closes it)... */
  dir?: string;
  /** ...or an open `level` database shared with other parts of a member (not closed by the store). */
  // biome-ignore lint/suspicious/noExplicitAny: any level database.
  db?: import('level').Level<any, any>;
  /** Time source for lease expiry. Default: Date. */
  clock?: Clock;
  /** Smallest lease TTL in seconds. Default 1 (a member passes etcd's value from its election timeout). */
  minLeaseTtl?: number;
  /** Default 128, as etcd. */
  maxTxnOps?: number;
  /** Default 1.5 MiB, as etcd. */
  maxRequestBytes?: number;
  /** fsync every batch. Default true. */
  sync?: boolean;
  /** Deletions per physical compaction batch. Default 1000. */
  compactionBatchSize?: number;
  /** Commands per batch when the store numbers them itself (`submit`). Default 1000. */
  maxBatchCommands?: number;
}

export type ApplyOutcome =
  | { ok: true; result: CommandResult }
  | { ok: false; error: EtceteraError };

export interface ApplyEntry {
  command: Command;
  index: number;
}

const systemClock: Clock = { now: () => Date.now() };

type ResolvedOptions = Required<Omit<StoreOptions, 'dir' | 'db' | 'minLeaseTtl'>>;

/** What `Store.prepare` hands a constructor. */
export interface PreparedStore {
  db: StoreDb;
  lessor: Lessor;
  options: ResolvedOptions;
  init: {
    revision: number;
    compact: number;
    compactDone: number;
    applied: number;
    index: KeyIndex;
    alarms: AlarmSet;
    auth: AuthStore;
  };
}

export class Store implements WatchableStore {
  private readonly db: StoreDb;
  readonly lessor: Lessor;
  private readonly options: ResolvedOptions;
  private readonly state: CommandApplierState;
  private readonly applier: CommandApplier;
  private readonly compactor: Compactor;
  private readonly listeners = new Set<(batch: EventBatch) => void>();
  private readonly resetListeners = new Set<(revision: Revision) => void>();
  private appliedIndexValue: number;
  private visibleRevision: Revision;
  private visibleCompact: number;
  private pendingBatches: EventBatch[] = [];
  /** Serialises applies: each batch runs after the previous one is durable. */
  private tail: Promise<unknown> = Promise.resolve();
  private queue: Array<{
    command: Command;
    resolve: (o: ApplyOutcome) => void;
    reject: (e: unknown) => void;
  }> = [];
  private draining = false;
  private closed = false;
  private failed: unknown;

  protected constructor(p: PreparedStore) {
    const { db, lessor, options, init } = p;
    this.db = db;
    this.lessor = lessor;
    this.options = options;
    this.state = {
      db,
      index: init.index,
      lessor,
      overlay: new Map(),
      ops: [],
      revision: init.revision as Revision,
      compactRevision: init.compact,
      alarms: init.alarms,
      auth: init.auth,
    };
    this.applier = new CommandApplier(this.state, () => this.db.snapshot());
    this.compactor = new Compactor(db, init.compactDone, {
      batchSize: options.compactionBatchSize,
    });
    this.appliedIndexValue = init.applied;
    this.visibleRevision = init.revision as Revision;
    this.visibleCompact = init.compact;
    if (init.compact > init.compactDone) this.compactor.schedule(init.compact);
  }

  /** Opens (or creates) a store. */
  static async open(options: StoreOptions): Promise<Store> {
    return new Store(await Store.prepare(options));
  }

  /** Opens the database and rebuilds the in-memory state (for subclasses' constructors). */
  protected static async prepare(options: StoreOptions): Promise<PreparedStore> {
    if (!options.db && !options.dir)
      throw new EtceteraError('ERR_INVALID_ARGUMENT', { detail: 'open needs dir or db' });
    const level = options.db ?? (await openLevel(options.dir as string));
    const db = storeDb(level, !options.db);
    const clock = options.clock ?? systemClock;
    const lessor = new Lessor(options.minLeaseTtl ?? 1, clock);
    const init = await loadState(
      db,
      lessor,
      new KeyIndex(),
      new AlarmSet(),
      new AuthStore(),
      clock.now(),
    );
    const resolved: ResolvedOptions = {
      clock,
      maxTxnOps: options.maxTxnOps ?? DEFAULT_MAX_TXN_OPS,
      maxRequestBytes: options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES,
      sync: options.sync ?? true,
      compactionBatchSize: options.compactionBatchSize ?? 1000,
      maxBatchCommands: options.maxBatchCommands ?? 1000,
    };
    return { db, lessor, options: resolved, init };
  }

  // --- state ----------------------------------------------------------------------------

  /** The newest durable revision. */
  get currentRevision(): Revision {
    return this.visibleRevision;
  }

  /** The revision the store is compacted to; 0 if never compacted. */
  get compactRevision(): Revision {
    return Math.max(0, this.visibleCompact) as Revision;
  }

  /** The index of the last applied command. */
  get appliedIndex(): AppliedIndex {
    return this.appliedIndexValue as AppliedIndex;
  }

  get limits(): Limits {
    return { maxTxnOps: this.options.maxTxnOps, maxRequestBytes: this.options.maxRequestBytes };
  }

  get clock(): Clock {
    return this.options.clock;
  }

  /**
   * The raised alarms as applied (alarms.ts): replicated, persisted with the data, in the
   * Raft snapshot. What etcd keeps in its `alarm` bucket.
   */
  alarms(): Alarm[] {
    return this.state.alarms.list();
  }

  /**
   * Users, roles, the enabled flag and the auth revision as applied (auth.ts): replicated,
   * persisted with the data, in the Raft snapshot. What etcd keeps in its auth buckets.
   * Read-only to callers: it changes through `auth` commands only.
   */
  get auth(): AuthStore {
    return this.state.auth;
  }

  /** Number of live keys (from the apply-side index). */
  get keyCount(): number {
    return this.state.index.size;
  }

  // --- apply ----------------------------------------------------------------------------

  /**
   * Applies committed commands in order with one durable write. Entries at or below the
   * applied index are skipped (a restarted member may be handed them again). A command that
   * fails its checks yields `{ok: false}` and changes nothing but the applied index.
   */
  applyBatch(entries: ApplyEntry[], nowMs?: number): Promise<ApplyOutcome[]> {
    const run = this.tail.then(() =>
      this.applyBatchExclusive(entries, nowMs ?? this.options.clock.now()),
    );
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async applyBatchExclusive(entries: ApplyEntry[], nowMs: number): Promise<ApplyOutcome[]> {
    this.assertUsable();
    const outcomes: ApplyOutcome[] = [];
    let compacted = false;
    try {
      for (const { command, index } of entries) {
        if (index <= this.appliedIndexValue) {
          outcomes.push({
            ok: true,
            result: { op: 'noop', result: { revision: this.state.revision } },
          });
          continue;
        }
        if (readsPast(command) && this.state.ops.length > 0) await this.writePending();
        outcomes.push(await this.applyOne(command, nowMs));
        if (command.op === 'compact' && outcomes.at(-1)?.ok) compacted = true;
        this.appliedIndexValue = index;
      }
      await this.writePending();
    } catch (e) {
      // Not a request error: the disk failed or a bug broke an invariant. The in-memory state
      // may be ahead of the disk now, so refuse all further work; reopening recovers.
      this.failed = e;
      throw new EtceteraError('ERR_STORAGE', { detail: String(e) }, { cause: e });
    }
    if (compacted) this.compactor.schedule(this.state.compactRevision);
    return outcomes;
  }

  private async applyOne(command: Command, nowMs: number): Promise<ApplyOutcome> {
    try {
      // The proposer checked this member's limits (or another member its own): apply checks
      // only what every member decides alike.
      checkCommand(command, APPLY_LIMITS);
      const { result, txn } = await this.applier.apply(command, nowMs);
      if (txn && txn.events.length > 0) {
        this.state.revision = txn.revision;
        this.pendingBatches.push({ revision: txn.revision, events: txn.events });
      }
      return { ok: true, result };
    } catch (e) {
      // Request and state errors are answers; corruption is not (it may strike mid-change).
      if (isEtceteraError(e) && e.code !== 'ERR_CORRUPT') return { ok: false, error: e };
      throw e;
    }
  }

  /** Writes everything applied so far in one atomic batch, then publishes it. */
  private async writePending(): Promise<void> {
    const ops: BatchOp[] = this.state.ops.splice(0);
    const meta = this.db.meta;
    ops.push({ type: 'put', sublevel: meta, key: META_REVISION, value: u64(this.state.revision) });
    ops.push({
      type: 'put',
      sublevel: meta,
      key: META_APPLIED,
      value: u64(this.appliedIndexValue),
    });
    if (this.state.compactRevision >= 0) {
      ops.push({
        type: 'put',
        sublevel: meta,
        key: META_COMPACT,
        value: u64(this.state.compactRevision),
      });
    }
    await this.db.write(ops, this.options.sync);
    this.state.overlay.clear();
    this.visibleRevision = this.state.revision;
    this.visibleCompact = this.state.compactRevision;
    const batches = this.pendingBatches;
    this.pendingBatches = [];
    for (const batch of batches) {
      for (const listener of this.listeners) {
        try {
          listener(batch);
        } catch {
          // A listener must not throw; one that does cannot stop the others or the store.
        }
      }
    }
  }

  /**
   * Applies one command in standalone mode: the store numbers it and groups it with the
   * commands submitted in the same turn into one durable write. Bad requests reject at once.
   */
  submit(command: Command): Promise<CommandResult> {
    try {
      this.assertUsable();
      checkCommand(command, this.limits);
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise<ApplyOutcome>((resolve, reject) => {
      this.queue.push({ command, resolve, reject });
      if (!this.draining) {
        this.draining = true;
        queueMicrotask(() => void this.drain());
      }
    }).then((o) => {
      if (!o.ok) throw o.error;
      return o.result;
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const items = this.queue.splice(0, this.options.maxBatchCommands);
      let next = this.appliedIndexValue;
      const entries = items.map((i) => ({ command: i.command, index: ++next }));
      try {
        const outcomes = await this.applyBatch(entries);
        for (const [i, item] of items.entries()) item.resolve(outcomes[i] as ApplyOutcome);
      } catch (e) {
        for (const item of items) item.reject(e);
      }
    }
    this.draining = false;
  }

  /** Runs `fn` after every earlier batch, and before any later one. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  // --- snapshots (Raft) -----------------------------------------------------------------

  /** The whole store, between two batches, as one blob (see snapshot.ts). */
  async exportSnapshot(): Promise<Uint8Array> {
    const snapshot = await this.exclusive(async () => {
      this.assertUsable();
      return this.db.snapshot();
    });
    try {
      return await exportRecords(this.db, snapshot);
    } finally {
      await snapshot.close();
    }
  }

  /**
   * A consistent read-only view of the store's records, taken between two batches, for
   * exports that stream (an etcd-format snapshot): the caller reads the sublevels at
   * `snapshot` and must call `close`. Writes go on meanwhile.
   */
  async openView(): Promise<{ db: StoreDb; snapshot: Snapshot; close(): Promise<void> }> {
    const snapshot = await this.exclusive(async () => {
      this.assertUsable();
      return this.db.snapshot();
    });
    return { db: this.db, snapshot, close: () => snapshot.close() };
  }

  /**
   * Replaces the whole store with an exported one in one atomic write, then rebuilds the
   * in-memory state. Reset listeners hear the new revision: history before it may be gone,
   * so a watch cache must start over from the store.
   */
  restoreSnapshot(data: Uint8Array): Promise<void> {
    return this.exclusive(async () => {
      this.assertUsable();
      await this.compactor.idle().catch(() => undefined);
      const ops = await restoreOps(this.db, data);
      try {
        await this.db.write(ops, this.options.sync);
        const init = await loadState(
          this.db,
          this.lessor,
          this.state.index,
          this.state.alarms,
          this.state.auth,
          this.options.clock.now(),
        );
        this.state.revision = init.revision as Revision;
        this.state.compactRevision = init.compact;
        this.appliedIndexValue = init.applied;
        this.visibleRevision = this.state.revision;
        this.visibleCompact = init.compact;
        this.compactor.reset(init.compactDone);
        if (init.compact > init.compactDone) this.compactor.schedule(init.compact);
      } catch (e) {
        this.failed = e;
        throw e;
      }
      for (const listener of this.resetListeners) {
        try {
          listener(this.visibleRevision);
        } catch {}
      }
    });
  }

  /** Calls `listener` when the store was replaced by a snapshot (history discontinuity). */
  onReset(listener: (revision: Revision) => void): () => void {
    this.resetListeners.add(listener);
    return () => this.resetListeners.delete(listener);
  }

  // --- reads ----------------------------------------------------------------------------

  private async readPoint(): Promise<ReadPoint> {
    this.assertUsable();
    const snapshot = this.db.snapshot();
    try {
      const [rev, compact] = await this.db.meta.getMany([META_REVISION, META_COMPACT], {
        snapshot,
      });
      return {
        snapshot,
        currentRevision: (rev ? readU64(rev, 0) : 1) as Revision,
        compactRevision: (compact ? readU64(compact, 0) : -1) as Revision,
      };
    } catch (e) {
      await snapshot.close();
      throw e;
    }
  }

  /** A consistent range read (etcd Range). */
  async range(request: RangeRequest): Promise<RangeResult> {
    checkRange(request);
    const at = await this.readPoint();
    try {
      return await rangeAt(this.db, request, at);
    } finally {
      await at.snapshot.close();
    }
  }

  /**
   * Streams a range in key order, `READ_CHUNK` key-values at a time, from one snapshot:
   * memory stays bounded however large the range, and writes continue meanwhile.
   * Limit, sort and filters are not applied (use `range` for those).
   */
  async *rangeStream(request: RangeRequest): AsyncGenerator<KeyValue[], void, undefined> {
    checkRange(request);
    const at = await this.readPoint();
    try {
      yield* rangeStreamAt(this.db, request, at);
    } finally {
      await at.snapshot.close();
    }
  }

  async *history(from: Revision, range: KeyRange): AsyncGenerator<EventBatch, void, undefined> {
    const at = await this.readPoint();
    try {
      if (from < at.compactRevision) {
        throw new EtceteraError('ERR_COMPACTED', { compactRevision: at.compactRevision });
      }
      if (from > at.currentRevision + 1) {
        throw new EtceteraError('ERR_FUTURE_REV', { currentRevision: at.currentRevision });
      }
      yield* historyAt(
        this.db,
        Math.max(from, 1),
        at.currentRevision,
        range,
        at.snapshot,
        at.compactRevision,
      );
    } finally {
      await at.snapshot.close();
    }
  }

  subscribe(listener: (batch: EventBatch) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // --- lifecycle ------------------------------------------------------------------------

  /** Resolves when physical compaction has caught up with the compacted revision. */
  compactionIdle(): Promise<void> {
    return this.compactor.idle();
  }

  /** Physical compaction progress (for tests and status). */
  get compactionDoneRevision(): number {
    return this.compactor.finishedRevision;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail;
    await this.compactor.idle().catch(() => undefined);
    await this.db.close();
  }

  private assertUsable(): void {
    if (this.closed) throw new EtceteraError('ERR_CLOSED');
    if (this.failed) throw new EtceteraError('ERR_STORAGE', { detail: String(this.failed) });
  }
}

async function loadState(
  db: StoreDb,
  lessor: Lessor,
  index: KeyIndex,
  alarms: AlarmSet,
  auth: AuthStore,
  nowMs: number,
) {
  lessor.clear();
  index.clear();
  alarms.load(await db.meta.get(META_ALARMS));
  auth.load(await db.meta.get(META_AUTH));
  const num = (name: Uint8Array, absent: number) =>
    readMetaNumber(db.meta, name, undefined, absent);
  const revision = await num(META_REVISION, 1);
  const compact = await num(META_COMPACT, -1);
  const compactDone = await num(META_COMPACT_DONE, -1);
  const applied = await num(META_APPLIED, 0);
  const leaseIt = db.lease.iterator({});
  for (;;) {
    const entries = await leaseIt.nextv(READ_CHUNK);
    if (entries.length === 0) break;
    for (const [k, v] of entries)
      lessor.grantUnsafe(readU64(k, 0) as LeaseId, readU64(v, 0), nowMs);
  }
  await leaseIt.close();
  const it = db.kv.iterator({});
  for (;;) {
    const entries = await it.nextv(READ_CHUNK);
    if (entries.length === 0) break;
    for (const [k, v] of entries) {
      const key = bytesToLatin1(k);
      const meta = decodeKvMeta(v);
      index.set(key, meta);
      if (meta.lease !== 0) lessor.attach(meta.lease, key);
    }
  }
  await it.close();
  return { revision, compact, compactDone, applied, index, alarms, auth };
}
