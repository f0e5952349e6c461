/**
 * RaftDriver: the imperative shell around the pure core (the "Node" of STYLE 1). It owns
 * the tick timer, the Ready loop, persistence and the hand-off to transport and
 * application; the core owns every Raft decision.
 *
 * The loop (one at a time; see the contract on `Ready` in ../types.ts):
 *   1. issue the read barriers requested since the last turn (one core readIndex call);
 *   2. rd = core.ready();
 *   3. send rd.messages at once (a leader's appends go out while it writes its own copy);
 *   4. persist snapshot + entries + hard state in ONE LevelDB batch, fsynced when needed;
 *   5. send rd.messagesAfterPersist (votes and acks: only now are they true);
 *   6. install rd.snapshot into the application, apply rd.committedEntries in order
 *      (awaiting the application), settle proposals and read barriers;
 *   7. core.advance(); maybe snapshot + compact; repeat while the core has work.
 * Ticks, inbound messages and proposals enter the core at any time, also while the loop
 * awaits disk or the application; they surface in the next Ready. So proposals batch
 * naturally: everything proposed during one fsync is written by the next.
 */
import { EventEmitter } from 'node:events';
import { EtceteraError } from '../../errors.js';
import { applyConfChange, decodeConfChange, encodeConfChange } from '../confchange.js';
import { createRawNode } from '../raw-node.js';
import {
  type ConfChange,
  type ConfState,
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
import { bytesEqual } from '../util.js';
import { type Clock, systemClock, type TimerHandle } from './clock.js';
import { newToken, sameToken, unwrap, wrap } from './envelope.js';
import { type Committed, PendingProposals, ReadBarriers } from './pending.js';
import type { AppliedEntry, DriverStatus, LeaderChange, RaftDriverOptions } from './types.js';

type Events = { leaderChange: [LeaderChange]; error: [Error] };

export class RaftDriver extends EventEmitter<Events> {
  private readonly o: RaftDriverOptions;
  private readonly clock: Clock;
  private readonly heartbeatMs: number;
  private readonly timeoutMs: number;
  private readonly token = newToken();
  private readonly proposals: PendingProposals;
  private readonly reads: ReadBarriers;
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
  private applied = LogIndex(0);
  /** The application has applied up to here already (restart): do not hand it again. */
  private appApplied: LogIndex;
  private confState: ConfState = { voters: [], learners: [] };
  private snapshotIndex = LogIndex(0);
  private pendingConf: { data: Uint8Array; waiter: (c: Committed) => void }[] = [];

  constructor(options: RaftDriverOptions) {
    super();
    this.o = options;
    this.clock = options.clock ?? systemClock;
    this.heartbeatMs = options.heartbeatMs ?? 100;
    this.timeoutMs = options.requestTimeoutMs ?? 7000;
    this.appApplied = options.appliedIndex ?? LogIndex(0);
    this.proposals = new PendingProposals(this.clock, this.timeoutMs);
    this.reads = new ReadBarriers(this.clock, this.timeoutMs, this.token);
  }

  /** Loads state, restores the application if it is behind the stored snapshot, starts ticking. */
  async start(): Promise<void> {
    if (this.core !== undefined) throw new Error('RaftDriver already started');
    const { storage, app } = this.o;
    const snap = storage.snapshot();
    this.snapshotIndex = snap.metadata.index;
    this.confState = storage.initialState().confState;
    if (this.appApplied < snap.metadata.index) {
      await app.restore?.(snap);
      this.appApplied = snap.metadata.index;
    }
    this.applied = snap.metadata.index;
    const hs = storage.initialState().hardState;
    this.term = hs.term;
    this.commit = hs.commit;
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
    const { voters } = this.confState;
    if (voters.length === 1 && voters[0] === this.o.id) this.core.campaign();
    this.kick();
  }

  /**
   * Proposes a command. Resolves with its log position once it is committed and applied
   * here; rejects with ERR_RAFT_PROPOSAL_DROPPED (no leader, transfer), ERR_LEADER_CHANGED
   * (overwritten), ERR_TIMEOUT (outcome unknown) or ERR_CLOSED.
   */
  propose(command: Uint8Array): Promise<Committed> {
    let core: RawNode;
    try {
      core = this.live();
    } catch (e) {
      return Promise.reject(e);
    }
    const seq = ++this.seq;
    const done = this.proposals.add(seq);
    try {
      core.propose(wrap(this.token, seq, command));
    } catch (e) {
      this.proposals.fail(seq, e);
    }
    this.kick();
    return done;
  }

  /** A linearizable read barrier: resolves once this member has applied the read index. */
  async readIndex(): Promise<LogIndex> {
    this.live();
    if (this.leader === NONE) return Promise.reject(new EtceteraError('ERR_NO_LEADER'));
    const p = this.reads.request();
    this.kick();
    return p;
  }

  /** Proposes a membership change; resolves when it is applied here. */
  async proposeConfChange(change: ConfChange): Promise<Committed> {
    const core = this.live();
    core.proposeConfChange(change);
    this.kick();
    // The core encodes the change itself; the same encoding recognises it when applied.
    const data = encodeConfChange(change);
    return new Promise<Committed>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.pendingConf = this.pendingConf.filter((p) => p !== entry);
        reject(new EtceteraError('ERR_TIMEOUT', { detail: 'conf change not applied in time' }));
      }, this.timeoutMs);
      const entry = {
        data,
        waiter: (c: Committed) => {
          timer.cancel();
          resolve(c);
        },
      };
      this.pendingConf.push(entry);
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
      applied: this.applied,
      lastIndex: this.o.storage.lastIndex(),
      snapshotIndex: this.snapshotIndex,
      stopped: this.stopped,
    };
  }

  /** Stops ticking, lets the current Ready finish, and fails every waiting request. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.ticker?.cancel();
    await this.loop;
    const err = this.failure ?? new EtceteraError('ERR_CLOSED');
    this.proposals.failAll(err);
    this.reads.failAll(err);
  }

  // --- the loop ---

  private tick(): void {
    if (this.stopped || this.core === undefined) return;
    this.core.tick();
    this.kick();
  }

  private kick(): void {
    if (this.scheduled || this.loop !== undefined || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.loop === undefined && !this.stopped) {
        this.loop = this.run().finally(() => {
          this.loop = undefined;
          // Work that arrived after the loop's last look (from a microtask) needs a new turn.
          if (this.core?.hasReady() || this.reads.hasOpen) this.kick();
        });
      }
    });
  }

  private async run(): Promise<void> {
    const core = this.core!;
    try {
      this.issueReads(core);
      while (!this.stopped && core.hasReady()) {
        const rd = core.ready();
        await this.handleReady(rd);
        core.advance();
        await this.maybeSnapshot();
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

  private async handleReady(rd: Ready): Promise<void> {
    const { storage, transport, app } = this.o;
    if (rd.hardState !== undefined) {
      this.commit = rd.hardState.commit;
      this.term = rd.hardState.term;
    }
    if (rd.softState !== undefined) this.noteSoftState(rd.softState.leader, rd.softState.role);
    if (rd.messages.length > 0) transport.send(rd.messages);
    this.noteOwnAppends(rd.entries);
    if (rd.entries.length > 0 || rd.hardState !== undefined || rd.snapshot !== undefined) {
      await storage.persist(rd);
    }
    if (rd.messagesAfterPersist.length > 0) transport.send(rd.messagesAfterPersist);
    if (rd.snapshot !== undefined) {
      const meta = rd.snapshot.metadata;
      await app.restore?.(rd.snapshot);
      this.applied = meta.index;
      this.appApplied = LogIndex(Math.max(this.appApplied, meta.index));
      this.snapshotIndex = meta.index;
      this.confState = meta.confState;
    }
    if (rd.committedEntries.length > 0) await this.applyEntries(rd.committedEntries);
    for (const rs of rd.readStates) this.reads.answered(rs.context, rs.index);
    this.reads.applied(this.applied);
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
      const env = unwrap(e.data);
      if (sameToken(env.token, this.token)) this.proposals.noteAppended(env.seq, e.index);
    }
  }

  private async applyEntries(entries: readonly Entry[]): Promise<void> {
    const out: AppliedEntry[] = [];
    const settle: { at: Committed; seq: number | undefined }[] = [];
    const confDone: { at: Committed; data: Uint8Array }[] = [];
    for (const e of entries) {
      const at = { index: e.index, term: e.term };
      if (e.type === EntryType.ConfChange) {
        const cc = decodeConfChange(e.data);
        this.confState = applyConfChange(this.confState, cc);
        this.updatePeers(cc);
        confDone.push({ at, data: e.data });
        if (e.index > this.appApplied)
          out.push({ ...at, type: e.type, data: cc.context ?? new Uint8Array(0), confChange: cc });
        continue;
      }
      if (e.data.length === 0) {
        settle.push({ at, seq: undefined });
        if (e.index > this.appApplied) out.push({ ...at, type: e.type, data: e.data });
        continue;
      }
      const env = unwrap(e.data);
      settle.push({ at, seq: sameToken(env.token, this.token) ? env.seq : undefined });
      if (e.index > this.appApplied) out.push({ ...at, type: e.type, data: env.command });
    }
    if (out.length > 0) await this.o.app.apply(out);
    const last = entries[entries.length - 1]!;
    this.applied = last.index;
    this.appApplied = LogIndex(Math.max(this.appApplied, last.index));
    for (const s of settle) this.proposals.applied(s.at, s.seq);
    for (const c of confDone) this.settleConf(c.at, c.data);
  }

  private settleConf(at: Committed, data: Uint8Array): void {
    const i = this.pendingConf.findIndex((p) => bytesEqual(p.data, data));
    if (i < 0) return;
    const [p] = this.pendingConf.splice(i, 1);
    p!.waiter(at);
  }

  private updatePeers(cc: ConfChange): void {
    const { transport } = this.o;
    if (cc.nodeId === this.o.id) return;
    if (cc.type === 'removeNode') return transport.removePeer?.(cc.nodeId);
    const url = cc.context === undefined ? '' : new TextDecoder().decode(cc.context);
    if (/^https?:\/\//.test(url)) transport.setPeer?.(cc.nodeId, url);
  }

  private async maybeSnapshot(): Promise<void> {
    const { app, storage } = this.o;
    const every = this.o.snapshotEntries ?? 10_000;
    if (app.snapshot === undefined || this.applied - this.snapshotIndex < every) return;
    const at = this.applied;
    const data = await app.snapshot();
    await storage.createSnapshot(at, this.confState, data);
    this.snapshotIndex = at;
    const keep = this.o.snapshotCatchUpEntries ?? 5_000;
    const compactTo = LogIndex(at - keep);
    if (compactTo >= storage.firstIndex()) await storage.compact(compactTo);
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
    if (this.stopped || this.core === undefined) {
      throw new EtceteraError('ERR_CLOSED', { detail: this.failure?.message ?? 'raft stopped' });
    }
    return this.core;
  }
}
