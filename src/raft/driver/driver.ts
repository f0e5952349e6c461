/**
 * RaftDriver: the imperative shell around the pure core (what etcd's raft calls a Node). It owns
 * the tick timer, the Ready loop, persistence and the hand-off to transport and the apply
 * stage (./apply-stage.ts); the core owns every Raft decision.
 *
 * The loop (one at a time; see the contract on `Ready` in ../types.ts):
 *   1. issue the read barriers requested since the last turn (one core readIndex call);
 *   2. rd = core.ready();
 *   3. send rd.messages at once (a leader's appends go out while it writes its own copy);
 *   4. queue rd.committedEntries for the apply stage (already durable: they apply while
 *      this Ready is written);
 *   5. persist snapshot + entries + hard state in ONE LevelDB batch, fsynced when needed;
 *   6. send rd.messagesAfterPersist (votes and acks: only now are they true);
 *   7. core.advance(); repeat while the core has work.
 * A Ready carrying a snapshot from the leader takes the slow path: wait for the apply
 * stage to drain, persist, then queue the restore and the entries after it.
 *
 * Ticks, inbound messages and proposals enter the core at any time, also while the loop
 * awaits the disk; they surface in the next Ready. So proposals batch naturally: all that
 * arrive during one fsync are written by the next.
 */
import { EventEmitter } from 'node:events';
import { EtceteraError } from '../../errors.js';
import { encodeConfChange } from '../confchange.js';
import { createRawNode } from '../raw-node.js';
import {
  type ConfChange,
  type Entry,
  EntryType,
  LogIndex,
  type Message,
  NONE,
  type NodeId,
  type RawNode,
  type Ready,
  Role,
  type SnapshotStatus,
  Term,
} from '../types.js';
import { ApplyStage, restoreInto, stoppedError } from './apply-stage.js';
import { type Clock, systemClock, type TimerHandle } from './clock.js';
import { newToken, open, wrap } from './envelope.js';
import { type Applied, type Committed, PendingProposals, ReadBarriers } from './pending.js';
import type { DriverStatus, LeaderChange, RaftDriverOptions } from './types.js';

type Events = { leaderChange: [LeaderChange]; error: [Error] };

/** Queued-but-unapplied entries above which the loop waits for the application. */
const MAX_APPLY_BACKLOG = 16_384;

export class RaftDriver extends EventEmitter<Events> {
  private readonly o: RaftDriverOptions;
  private readonly clock: Clock;
  private readonly heartbeatMs: number;
  private readonly timeoutMs: number;
  private readonly token = newToken();
  private readonly proposals: PendingProposals;
  private readonly reads: ReadBarriers;
  private applyStage: ApplyStage | undefined;
  private core: RawNode | undefined;
  private ticker: TimerHandle | undefined;
  private seq = 0;
  private scheduled = false;
  private loop: Promise<void> | undefined;
  private stopped = false;
  private failure: Error | undefined;
  private leader: NodeId = NONE;
  private role: Role = Role.Follower;
  private term = Term(0);
  private commit = LogIndex(0);

  constructor(options: RaftDriverOptions) {
    super();
    this.o = options;
    this.clock = options.clock ?? systemClock;
    this.heartbeatMs = options.heartbeatMs ?? 100;
    this.timeoutMs = options.requestTimeoutMs ?? 7000;
    this.proposals = new PendingProposals(this.clock, this.timeoutMs);
    this.reads = new ReadBarriers(this.clock, this.timeoutMs, this.token);
  }

  /** Loads state, restores the application if it is behind the stored snapshot, starts ticking. */
  async start(): Promise<void> {
    if (this.core !== undefined) throw new Error('RaftDriver already started');
    const { storage, app } = this.o;
    const snapshot = storage.snapshot();
    const { hardState, confState } = storage.initialState();
    let appApplied = this.o.appliedIndex ?? LogIndex(0);
    if (appApplied < snapshot.metadata.index) {
      await restoreInto(app, snapshot);
      appApplied = snapshot.metadata.index;
    }
    this.applyStage = new ApplyStage(
      {
        selfId: this.o.id,
        app,
        storage,
        transport: this.o.transport,
        token: this.token,
        proposals: this.proposals,
        reads: this.reads,
        snapshotEntries: this.o.snapshotEntries ?? 10_000,
        catchUpEntries: this.o.snapshotCatchUpEntries ?? 5_000,
        onFatal: (e) => this.fail(e),
      },
      { snapshot, confState, appApplied },
    );
    this.term = hardState.term;
    this.commit = hardState.commit;
    // The core starts at the snapshot (its default `applied`) and hands out every committed
    // entry after it again, so conf changes replay inside Raft; the apply stage skips what the
    // application already has.
    const electionTick = Math.max(2, Math.round((this.o.electionMs ?? 1000) / this.heartbeatMs));
    this.core = (this.o.createRawNode ?? createRawNode)({
      ...this.o.raft,
      id: this.o.id,
      storage,
      electionTick,
      heartbeatTick: 1,
      random: this.o.random ?? Math.random,
    });
    this.ticker = this.clock.setInterval(() => this.tick(), this.heartbeatMs);
    const { voters } = confState;
    if (voters.length === 1 && voters[0] === this.o.id) this.core.campaign();
    this.kick();
  }

  /**
   * Proposes a command. Resolves with its log position and the application's outcome for
   * it once it is committed and applied here; rejects with ERR_RAFT_PROPOSAL_DROPPED (no leader, transfer), ERR_LEADER_CHANGED
   * (overwritten), ERR_TIMEOUT (outcome unknown) or ERR_CLOSED.
   */
  propose(command: Uint8Array): Promise<Applied> {
    if (this.stopped || this.core === undefined) return Promise.reject(stoppedError(this.failure));
    const seq = ++this.seq;
    const done = this.proposals.add(seq);
    try {
      this.core.propose(wrap(this.token, seq, command));
    } catch (e) {
      this.proposals.fail(seq, e);
    }
    this.kick();
    return done;
  }

  /** A linearizable read barrier: resolves once this member has applied the read index. */
  async readIndex(): Promise<LogIndex> {
    this.live();
    if (this.leader === NONE) throw new EtceteraError('ERR_NO_LEADER');
    const p = this.reads.request();
    this.kick();
    return p;
  }

  /** Proposes a membership change; resolves when it is applied here. */
  async proposeConfChange(change: ConfChange): Promise<Committed> {
    this.live().proposeConfChange(change);
    this.kick();
    // The core encodes the change itself; the same encoding recognises it when applied.
    const data = encodeConfChange(change);
    return new Promise<Committed>((resolve, reject) => {
      const cancel = this.applyStage!.awaitConfChange(data, (c) => {
        timer.cancel();
        resolve(c);
      });
      const timer = this.clock.setTimeout(() => {
        cancel();
        reject(new EtceteraError('ERR_TIMEOUT', { detail: 'conf change not applied in time' }));
      }, this.timeoutMs);
    });
  }

  /** Asks the leader to hand over to `to`; resolves when `to` is the known leader. */
  async transferLeader(to: NodeId): Promise<void> {
    const core = this.live();
    if (this.leader === to) return;
    core.transferLeader(to);
    this.kick();
    await new Promise<void>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.off('leaderChange', on);
        reject(new EtceteraError('ERR_TIMEOUT', { detail: `leadership not moved to ${to}` }));
      }, this.timeoutMs);
      const on = (c: LeaderChange) => {
        if (c.leader !== to) return;
        timer.cancel();
        this.off('leaderChange', on);
        resolve();
      };
      this.on('leaderChange', on);
    });
  }

  /** Starts an election now (tests, benchmarks, operator tooling). */
  campaign(): void {
    this.live().campaign();
    this.kick();
  }

  /** Feeds a message from the transport. */
  receive(m: Message): void {
    if (this.stopped || this.core === undefined) return;
    this.core.step(m);
    this.kick();
  }

  reportUnreachable(id: NodeId): void {
    if (this.stopped || this.core === undefined) return;
    this.core.reportUnreachable(id);
  }

  reportSnapshot(id: NodeId, status: SnapshotStatus): void {
    if (this.stopped || this.core === undefined) return;
    this.core.reportSnapshot(id, status);
    this.kick();
  }

  status(): DriverStatus {
    return {
      id: this.o.id,
      leader: this.leader,
      role: this.role,
      term: this.term,
      commit: this.commit,
      applied: this.applyStage?.applied ?? LogIndex(0),
      lastIndex: this.o.storage.lastIndex(),
      snapshotIndex: this.applyStage?.snapshotIndex ?? LogIndex(0),
      stopped: this.stopped,
    };
  }

  /**
   * Stops ticking, lets the current Ready and queued applies finish, flushes storage and
   * fails every waiter. The transport and the database stay open: the member owns them.
   */
  async stop(): Promise<void> {
    if (this.stopped && this.loop === undefined) return;
    this.stopped = true;
    this.ticker?.cancel();
    await this.loop;
    await this.applyStage?.idle();
    // Writes a deferred commit index; a storage that already failed has nothing to add.
    await this.o.storage.flush().catch(() => {});
    const err = this.failure ?? stoppedError(undefined);
    this.proposals.failAll(err);
    this.reads.failAll(err);
  }

  // --- the loop ---

  private tick(): void {
    if (this.stopped || this.core === undefined) return;
    this.core.tick();
    this.proposals.sweep();
    this.kick();
  }

  private kick(): void {
    if (this.scheduled || this.loop !== undefined || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.loop !== undefined || this.stopped) return;
      this.loop = this.run().finally(() => {
        this.loop = undefined;
        // Work that arrived after the loop's last look (from a microtask) needs a new turn.
        if (this.core?.hasReady() || this.reads.hasOpen) this.kick();
      });
    });
  }

  private async run(): Promise<void> {
    const core = this.core!;
    const stage = this.applyStage!;
    try {
      this.issueReads(core);
      while (!this.stopped && core.hasReady()) {
        await this.handleReady(core.ready(), stage);
        core.advance();
        if (stage.backlog > MAX_APPLY_BACKLOG) await stage.idle();
        this.issueReads(core);
      }
    } catch (e) {
      this.fail(e as Error);
    }
  }

  private issueReads(core: RawNode): void {
    const ctx = this.reads.takeOpen();
    if (ctx === undefined) return;
    try {
      core.readIndex(ctx);
    } catch (e) {
      this.reads.refuse(ctx, e);
    }
  }

  private async handleReady(rd: Ready, stage: ApplyStage): Promise<void> {
    const { storage, transport } = this.o;
    if (rd.hardState !== undefined) {
      this.commit = rd.hardState.commit;
      this.term = rd.hardState.term;
    }
    if (rd.softState !== undefined) this.noteSoftState(rd.softState.leader, rd.softState.role);
    if (rd.messages.length > 0) transport.send(rd.messages);
    this.noteOwnAppends(rd.entries);
    const mustWrite = rd.entries.length > 0 || rd.hardState !== undefined;
    if (rd.snapshot !== undefined) {
      await stage.idle();
      await storage.persist(rd);
      stage.enqueueSnapshot(rd.snapshot);
      stage.enqueue(rd.committedEntries);
    } else {
      stage.enqueue(rd.committedEntries);
      if (mustWrite) await storage.persist(rd);
    }
    if (rd.messagesAfterPersist.length > 0) transport.send(rd.messagesAfterPersist);
    for (const rs of rd.readStates) this.reads.answered(rs.context, rs.index);
    if (rd.readStates.length > 0) this.reads.applied(stage.applied);
  }

  private noteSoftState(leader: NodeId, role: Role): void {
    const changed = leader !== this.leader || role !== this.role;
    this.leader = leader;
    this.role = role;
    if (changed) this.emit('leaderChange', { leader, term: this.term, role });
  }

  /** As leader, learn where our proposals landed (see PendingProposals.byIndex). */
  private noteOwnAppends(entries: readonly Entry[]): void {
    if (this.role !== Role.Leader || this.proposals.size === 0) return;
    for (const e of entries) {
      if (e.type !== EntryType.Normal || e.data.length === 0) continue;
      const seq = open(e.data, this.token).ownSeq;
      if (seq >= 0) this.proposals.noteAppended(seq, e.index);
    }
  }

  private fail(e: Error): void {
    if (this.failure !== undefined) return;
    this.failure = e;
    this.stopped = true;
    this.ticker?.cancel();
    this.proposals.failAll(e);
    this.reads.failAll(e);
    if (this.listenerCount('error') > 0) this.emit('error', e);
  }

  private live(): RawNode {
    if (this.stopped || this.core === undefined) throw stoppedError(this.failure);
    return this.core;
  }
}
