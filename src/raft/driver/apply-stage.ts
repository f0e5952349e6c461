/**
 * The apply stage of the driver: hands committed entries to the application in log order,
 * settles the requests waiting on them, tracks membership as of the applied index, and
 * takes snapshots to compact the log.
 *
 * It runs as its own promise chain beside the Ready loop, as the Ready contract allows
 * ("applied, or queued for applying in order"): the loop queues a Ready's committed
 * entries BEFORE it awaits that Ready's fsync, so applying overlaps with the disk write.
 * That is safe because committed entries are already durable (from an earlier Ready).
 *
 * Invariants:
 *   1. Batches are applied strictly in the order queued, one at a time.
 *   2. `applied` only grows; after a batch resolves, the application has applied exactly
 *      the entries up to `applied` (entries at or below `appApplied` were applied before a
 *      restart and are skipped).
 *   3. `confState` is the membership as of `applied`, so a snapshot taken at `applied`
 *      records the right members.
 *   4. The first failure (the application threw, or a storage write failed) is fatal:
 *      later batches are dropped and `onFatal` is called once.
 */
import { EtceteraError } from '../../errors.js';
import { applyConfChange, decodeConfChange } from '../confchange.js';
import {
  type ConfChange,
  type ConfState,
  type Entry,
  EntryType,
  LogIndex,
  type NodeId,
  type Snapshot,
} from '../types.js';
import { bytesEqual } from '../util.js';
import { open, type Token } from './envelope.js';
import type { Committed, PendingProposals, ReadBarriers } from './pending.js';
import type { AppliedEntry, DriverTransport, DurableStorage, RaftApplication } from './types.js';

export interface ApplyStageDeps {
  readonly selfId: NodeId;
  readonly app: RaftApplication;
  readonly storage: DurableStorage;
  readonly transport: DriverTransport;
  readonly token: Token;
  readonly proposals: PendingProposals;
  readonly reads: ReadBarriers;
  readonly snapshotEntries: number;
  readonly catchUpEntries: number;
  readonly onFatal: (e: Error) => void;
}

const EMPTY = new Uint8Array(0);

export class ApplyStage {
  applied: LogIndex;
  snapshotIndex: LogIndex;
  confState: ConfState;
  private appApplied: LogIndex;
  private chain: Promise<void> = Promise.resolve();
  private queued = 0;
  private failed = false;
  private conf: { data: Uint8Array; done: (c: Committed) => void }[] = [];

  constructor(
    private readonly d: ApplyStageDeps,
    start: { snapshot: Snapshot; confState: ConfState; appApplied: LogIndex },
  ) {
    this.applied = start.snapshot.metadata.index;
    this.snapshotIndex = start.snapshot.metadata.index;
    this.confState = start.confState;
    this.appApplied = start.appApplied;
  }

  /** Entries queued and not yet applied. */
  get backlog(): number {
    return this.queued;
  }

  /** Resolves when everything queued so far is applied (never rejects). */
  idle(): Promise<void> {
    return this.chain;
  }

  enqueue(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    this.queued += entries.length;
    this.schedule(async () => {
      await this.applyEntries(entries);
      this.queued -= entries.length;
    });
  }

  enqueueSnapshot(snap: Snapshot): void {
    this.schedule(async () => {
      await restoreInto(this.d.app, snap);
      const meta = snap.metadata;
      this.applied = meta.index;
      this.appApplied = LogIndex(Math.max(this.appApplied, meta.index));
      this.snapshotIndex = meta.index;
      this.confState = meta.confState;
      this.d.reads.applied(this.applied);
    });
  }

  /** Registers a conf change proposal; `done` runs when an identical change applies. */
  awaitConfChange(data: Uint8Array, done: (c: Committed) => void): () => void {
    const entry = { data, done };
    this.conf.push(entry);
    return () => {
      this.conf = this.conf.filter((c) => c !== entry);
    };
  }

  private schedule(step: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      if (this.failed) return;
      try {
        await step();
      } catch (e) {
        this.failed = true;
        this.d.onFatal(e instanceof Error ? e : new Error(String(e)));
      }
    });
  }

  private async applyEntries(entries: readonly Entry[]): Promise<void> {
    const out: AppliedEntry[] = [];
    const seqs: number[] = [];
    /** Per entry: its position in `out` (what the application answers for), or -1. */
    const slots: number[] = [];
    for (const e of entries) {
      let seq = -1;
      let entry: AppliedEntry;
      if (e.type === EntryType.ConfChange) {
        const cc = decodeConfChange(e.data);
        this.confState = applyConfChange(this.confState, cc);
        this.updatePeers(cc);
        entry = {
          index: e.index,
          term: e.term,
          type: e.type,
          data: cc.context ?? EMPTY,
          confChange: cc,
        };
      } else if (e.data.length === 0) {
        entry = e;
      } else {
        const env = open(e.data, this.d.token);
        seq = env.ownSeq;
        entry = { index: e.index, term: e.term, type: e.type, data: env.command };
      }
      seqs.push(seq);
      if (e.index > this.appApplied) slots.push(out.push(entry) - 1);
      else slots.push(-1);
    }
    const outcomes = out.length > 0 ? ((await this.d.app.apply(out)) ?? undefined) : undefined;
    const last = entries[entries.length - 1]!;
    this.applied = last.index;
    if (last.index > this.appApplied) this.appApplied = last.index;
    for (let k = 0; k < entries.length; k++) {
      const e = entries[k]!;
      const slot = slots[k]!;
      const outcome = slot >= 0 ? outcomes?.[slot] : undefined;
      this.d.proposals.applied({ index: e.index, term: e.term, outcome }, seqs[k]!);
      if (e.type === EntryType.ConfChange) this.settleConf(e, e.data);
    }
    this.d.reads.applied(this.applied);
    await this.maybeSnapshot();
  }

  private settleConf(at: Committed, data: Uint8Array): void {
    const i = this.conf.findIndex((p) => bytesEqual(p.data, data));
    if (i < 0) return;
    const [p] = this.conf.splice(i, 1);
    p!.done({ index: at.index, term: at.term });
  }

  private updatePeers(cc: ConfChange): void {
    const { transport, selfId } = this.d;
    if (cc.nodeId === selfId) return;
    if (cc.type === 'removeNode') return transport.removePeer?.(cc.nodeId);
    const url = cc.context === undefined ? '' : new TextDecoder().decode(cc.context);
    if (/^https?:\/\//.test(url)) transport.setPeer?.(cc.nodeId, url);
  }

  /** Snapshot at `applied` (invariant 3) every `snapshotEntries`, then compact behind it. */
  private async maybeSnapshot(): Promise<void> {
    const { app, storage, snapshotEntries, catchUpEntries } = this.d;
    if (app.snapshot === undefined || this.applied - this.snapshotIndex < snapshotEntries) return;
    const at = this.applied;
    const data = await app.snapshot();
    await storage.createSnapshot(at, this.confState, data);
    this.snapshotIndex = at;
    const compactTo = LogIndex(at - catchUpEntries);
    if (compactTo >= storage.firstIndex()) await storage.compact(compactTo);
  }
}

/** Installs a snapshot; an application that cannot would silently diverge, so that is fatal. */
export async function restoreInto(app: RaftApplication, snap: Snapshot): Promise<void> {
  if (app.restore === undefined) {
    throw new Error(
      `a snapshot at ${snap.metadata.index} arrived but the application has no restore()`,
    );
  }
  await app.restore(snap);
}

export function stoppedError(failure: Error | undefined): EtceteraError {
  return new EtceteraError('ERR_CLOSED', { detail: failure?.message ?? 'raft stopped' });
}
