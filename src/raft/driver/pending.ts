/**
 * Bookkeeping for requests waiting on the Raft loop: proposals (until their entry is
 * applied) and read barriers (until the applied index reaches their read index).
 * Pure data structures with timers injected; the driver feeds them events.
 */
import { EtceteraError } from '../../errors.js';
import type { LogIndex, Term } from '../types.js';
import { contextKey } from '../util.js';
import type { Clock, TimerHandle } from './clock.js';

export interface Committed {
  readonly index: LogIndex;
  readonly term: Term;
}

/** A proposal applied here: where it landed and what the application answered for it. */
export interface Applied extends Committed {
  /** The application's outcome for this entry (see RaftApplication.apply). */
  readonly outcome: unknown;
}

interface Waiter<T> {
  resolve(v: T): void;
  reject(e: unknown): void;
  timer: TimerHandle;
}

interface ProposalWaiter {
  resolve(v: Applied): void;
  reject(e: unknown): void;
  deadline: number;
}

/**
 * Proposals by sequence number. Invariants:
 *   1. `waiting` is in proposal order, and every proposal has the same timeout, so it is
 *      also in deadline order: `sweep` stops at the first live one (no timer per
 *      proposal, which matters at tens of thousands of proposals per second).
 *   2. `byIndex` maps a log index to the seq of the proposal this member saw appended
 *      there (as leader). If a different entry is applied at that index, a leader change
 *      overwrote the proposal and it will never apply.
 */
export class PendingProposals {
  private readonly waiting = new Map<number, ProposalWaiter>();
  private readonly byIndex = new Map<number, number>();

  constructor(
    private readonly clock: Clock,
    private readonly timeoutMs: number,
  ) {}

  get size(): number {
    return this.waiting.size;
  }

  add(seq: number): Promise<Applied> {
    return new Promise<Applied>((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject, deadline: this.clock.now() + this.timeoutMs });
    });
  }

  /** Fails every proposal whose deadline has passed (invariant 1). */
  sweep(): void {
    const now = this.clock.now();
    for (const [seq, w] of this.waiting) {
      if (w.deadline > now) break;
      this.settle(
        seq,
        new EtceteraError('ERR_TIMEOUT', { detail: 'proposal not applied in time' }),
      );
    }
    // Slots of proposals that timed out, or that a snapshot skipped, are never applied
    // here: forget them so the map stays as small as what is in flight.
    if (this.byIndex.size > this.waiting.size) {
      for (const [index, seq] of this.byIndex)
        if (!this.waiting.has(seq)) this.byIndex.delete(index);
    }
  }

  /** Slots remembered (for tests: stays bounded by the proposals in flight). */
  get trackedSlots(): number {
    return this.byIndex.size;
  }

  /** The proposal `seq` was appended to this (leader's) log at `index`. */
  noteAppended(seq: number, index: LogIndex): void {
    if (this.waiting.has(seq)) this.byIndex.set(index, seq);
  }

  /** An entry was applied at `at`; `seq` is >= 0 when it is one of this member's. */
  applied(at: Applied, seq: number): void {
    if (this.byIndex.size > 0) {
      const expected = this.byIndex.get(at.index);
      if (expected !== undefined) {
        this.byIndex.delete(at.index);
        if (expected !== seq) this.settle(expected, new EtceteraError('ERR_LEADER_CHANGED'));
      }
    }
    if (seq >= 0) this.settle(seq, { applied: at });
  }

  /** Rejects one proposal (for example one the core refused). */
  fail(seq: number, err: unknown): void {
    this.settle(seq, toError(err));
  }

  failAll(err: unknown): void {
    const e = toError(err);
    for (const seq of [...this.waiting.keys()]) this.settle(seq, e);
    this.byIndex.clear();
  }

  private settle(seq: number, result: { applied: Applied } | Error): void {
    const w = this.waiting.get(seq);
    if (w === undefined) return;
    this.waiting.delete(seq);
    if (result instanceof Error) w.reject(result);
    else w.resolve(result.applied);
  }
}

function toError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

interface ReadBatch {
  context: Uint8Array;
  waiters: Waiter<LogIndex>[];
  index?: LogIndex;
}

/**
 * Read barriers, batched: every `request()` made before the next issue joins one batch
 * and shares one core readIndex call. A batch issued earlier is never joined: its read
 * point may predate writes that completed before the new caller asked, so sharing it
 * would not be linearizable.
 */
export class ReadBarriers {
  private open: ReadBatch | undefined;
  private readonly issued = new Map<string, ReadBatch>();
  private seq = 0;

  constructor(
    private readonly clock: Clock,
    private readonly timeoutMs: number,
    private readonly contextPrefix: Uint8Array,
  ) {}

  request(): Promise<LogIndex> {
    if (this.open === undefined) {
      const context = new Uint8Array(this.contextPrefix.length + 4);
      context.set(this.contextPrefix);
      new DataView(context.buffer).setUint32(this.contextPrefix.length, ++this.seq >>> 0);
      this.open = { context, waiters: [] };
    }
    const batch = this.open;
    return new Promise<LogIndex>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        const i = batch.waiters.indexOf(waiter);
        if (i >= 0) batch.waiters.splice(i, 1);
        reject(new EtceteraError('ERR_TIMEOUT', { detail: 'read index not confirmed in time' }));
      }, this.timeoutMs);
      const waiter: Waiter<LogIndex> = { resolve, reject, timer };
      batch.waiters.push(waiter);
    });
  }

  /** Takes the batch to issue now (the caller hands its context to the core). */
  takeOpen(): Uint8Array | undefined {
    const batch = this.open;
    if (batch === undefined) return undefined;
    this.open = undefined;
    this.issued.set(contextKey(batch.context), batch);
    return batch.context;
  }

  /** The core refused to issue `context`. */
  refuse(context: Uint8Array, err: unknown): void {
    const key = contextKey(context);
    const batch = this.issued.get(key);
    this.issued.delete(key);
    if (batch !== undefined) settleAll(batch, err);
  }

  /** The core answered `context` with read index `index`. */
  answered(context: Uint8Array, index: LogIndex): void {
    const batch = this.issued.get(contextKey(context));
    if (batch !== undefined) batch.index = index;
  }

  /** Resolves every answered batch whose index is applied. */
  applied(applied: LogIndex): void {
    for (const [key, batch] of this.issued) {
      if (batch.index !== undefined && batch.index <= applied) {
        this.issued.delete(key);
        settleAll(batch, batch.index);
      } else if (batch.waiters.length === 0) {
        this.issued.delete(key); // every waiter timed out: forget the lost request
      }
    }
  }

  failAll(err: unknown): void {
    if (this.open !== undefined) settleAll(this.open, err);
    this.open = undefined;
    for (const batch of this.issued.values()) settleAll(batch, err);
    this.issued.clear();
  }

  get hasOpen(): boolean {
    return this.open !== undefined;
  }
}

function settleAll(batch: ReadBatch, outcome: LogIndex | unknown): void {
  for (const w of batch.waiters) {
    w.timer.cancel();
    if (outcome instanceof Error) w.reject(outcome);
    else w.resolve(outcome as LogIndex);
  }
  batch.waiters = [];
}
