/**
 * RawNode: the public face of the core. It wraps Raft with the Ready/advance protocol:
 * `ready()` collects everything pending since the last Ready and remembers what it handed
 * out; `advance()` is the driver's acknowledgement that all of it was handled, after which
 * the core marks entries stable, moves the applied index and applies conf changes.
 */
import { EtceteraError } from '../errors.js';
import { encodeConfChange } from './confchange.js';
import { applyConfChangeEntry } from './membership.js';
import { Raft, type StepResult } from './raft.js';
import {
  type ConfChange,
  type Entry,
  EntryType,
  type HardState,
  LogIndex,
  type Message,
  type NodeId,
  ProgressState,
  type ProgressStatus,
  type RaftConfig,
  type RawNode,
  type ReadState,
  type Ready,
  Role,
  type SnapshotStatus,
  type SoftState,
  type Status,
  Term,
} from './types.js';
import { invariant } from './util.js';
import { isValidMessage, validateConfig } from './validate.js';

/** What the outstanding Ready handed out, to be confirmed by advance(). */
interface InFlight {
  readonly lastIndex: LogIndex | undefined;
  readonly lastTerm: Term | undefined;
  readonly snapshotIndex: LogIndex | undefined;
  readonly committed: readonly Entry[];
}

const NO_ENTRIES: readonly Entry[] = Object.freeze([]);
const NO_MESSAGES: readonly Message[] = Object.freeze([]);
const NO_READS: readonly ReadState[] = Object.freeze([]);

export function createRawNode(config: RaftConfig): RawNode {
  return new RawNodeImpl(config);
}

export class RawNodeImpl implements RawNode {
  /** The state machine; internal (tests and the simulator inspect it). */
  readonly raft: Raft;
  private prevSoft: SoftState;
  private prevHard: HardState;
  private inFlight: InFlight | undefined = undefined;

  constructor(config: RaftConfig) {
    validateConfig(config);
    this.raft = new Raft(config);
    this.prevSoft = this.raft.softState();
    this.prevHard = this.raft.hardState();
  }

  tick(): void {
    this.raft.tick();
  }

  step(m: Message): void {
    if (!isValidMessage(m, this.raft.id)) return;
    this.raft.step(m);
  }

  campaign(): void {
    this.raft.hup(this.raft.preVote ? 'preElection' : 'election');
  }

  propose(data: Uint8Array): void {
    this.proposeEntry(EntryType.Normal, data);
  }

  proposeConfChange(change: ConfChange): void {
    this.proposeEntry(EntryType.ConfChange, encodeConfChange(change));
  }

  private proposeEntry(type: Entry['type'], data: Uint8Array): void {
    const id = this.raft.id;
    const entry: Entry = { term: Term(0), index: LogIndex(0), type, data };
    throwIfRefused(
      this.raft.step({ type: 'prop', from: id, to: id, term: Term(0), entries: [entry] }),
    );
  }

  readIndex(context: Uint8Array): void {
    const id = this.raft.id;
    throwIfRefused(this.raft.step({ type: 'readIndex', from: id, to: id, term: Term(0), context }));
  }

  transferLeader(to: NodeId): void {
    const id = this.raft.id;
    throwIfRefused(
      this.raft.step({ type: 'transferLeader', from: id, to: id, term: Term(0), transferee: to }),
    );
  }

  reportUnreachable(id: NodeId): void {
    const pr = this.leaderProgress(id);
    if (pr !== undefined && pr.state === ProgressState.Replicate) pr.becomeProbe();
  }

  reportSnapshot(id: NodeId, status: SnapshotStatus): void {
    const pr = this.leaderProgress(id);
    if (pr === undefined || pr.state !== ProgressState.Snapshot) return;
    if (status === 'failure') pr.pendingSnapshot = LogIndex(0);
    pr.becomeProbe();
    // Wait for the follower's next heartbeat answer before probing again.
    pr.probeSent = true;
  }

  private leaderProgress(id: NodeId) {
    return this.raft.role === Role.Leader ? this.raft.tracker.progress.get(id) : undefined;
  }

  hasReady(): boolean {
    const r = this.raft;
    return (
      r.needBcast ||
      r.msgs.length > 0 ||
      r.msgsAfterPersist.length > 0 ||
      r.readStates.length > 0 ||
      r.log.unstable.entries.length > 0 ||
      r.log.unstable.snapshot !== undefined ||
      r.log.hasNextCommittedEntries() ||
      r.confChanged ||
      // Compared field by field: this runs after every input, so it must not allocate.
      r.lead !== this.prevSoft.leader ||
      r.role !== this.prevSoft.role ||
      r.term !== this.prevHard.term ||
      r.vote !== this.prevHard.vote ||
      r.log.committed !== this.prevHard.commit
    );
  }

  ready(): Ready {
    invariant(this.inFlight === undefined, 'ready() called again before advance()');
    const r = this.raft;
    r.flushBroadcast();
    const log = r.log;
    const u = log.unstable;
    // Called once per input in a busy driver: allocate only what carries something.
    const entries = u.entries.length > 0 ? u.entries.slice() : NO_ENTRIES;
    const committedEntries = log.hasNextCommittedEntries()
      ? log.nextCommittedEntries()
      : NO_ENTRIES;
    const ps = this.prevSoft;
    const ph = this.prevHard;
    const softChanged = r.lead !== ps.leader || r.role !== ps.role;
    const termOrVote = r.term !== ph.term || r.vote !== ph.vote;
    const hardChanged = termOrVote || log.committed !== ph.commit;
    if (softChanged) this.prevSoft = r.softState();
    if (hardChanged) this.prevHard = r.hardState();
    const rd: Ready = {
      softState: softChanged ? this.prevSoft : undefined,
      hardState: hardChanged ? this.prevHard : undefined,
      entries,
      snapshot: u.snapshot,
      messages: r.msgs.length > 0 ? r.msgs : NO_MESSAGES,
      messagesAfterPersist: r.msgsAfterPersist.length > 0 ? r.msgsAfterPersist : NO_MESSAGES,
      committedEntries,
      readStates: r.readStates.length > 0 ? r.readStates : NO_READS,
      confState: r.confChanged ? r.tracker.conf : undefined,
      mustSync: entries.length > 0 || u.snapshot !== undefined || termOrVote,
    };
    if (r.msgs.length > 0) r.msgs = [];
    if (r.msgsAfterPersist.length > 0) r.msgsAfterPersist = [];
    if (r.readStates.length > 0) r.readStates = [];
    r.confChanged = false;
    const last = entries[entries.length - 1];
    this.inFlight = {
      lastIndex: last?.index,
      lastTerm: last?.term,
      snapshotIndex: u.snapshot?.metadata.index,
      committed: committedEntries,
    };
    return rd;
  }

  advance(): void {
    const f = this.inFlight;
    invariant(f !== undefined, 'advance() without ready()');
    this.inFlight = undefined;
    const r = this.raft;
    if (f.snapshotIndex !== undefined) {
      r.log.stableSnapTo(f.snapshotIndex);
      r.log.appliedTo(f.snapshotIndex);
    }
    if (f.lastIndex !== undefined) r.log.stableTo(f.lastIndex, f.lastTerm!);
    r.onStable();
    const last = f.committed[f.committed.length - 1];
    if (last !== undefined) {
      r.log.appliedTo(last.index);
      for (const e of f.committed) if (e.type === EntryType.ConfChange) applyConfChangeEntry(r, e);
      r.reduceUncommittedSize(f.committed);
    }
  }

  status(): Status {
    const r = this.raft;
    const base = {
      id: r.id,
      hardState: r.hardState(),
      softState: r.softState(),
      applied: r.log.applied,
      lastIndex: r.log.lastIndex(),
      confState: r.tracker.conf,
      leadTransferee: r.leadTransferee,
    };
    if (r.role !== Role.Leader) return base;
    const progress = new Map<NodeId, ProgressStatus>();
    for (const [id, pr] of r.tracker.progress) {
      const { match, next, state, learner, recentActive } = pr;
      progress.set(id, { match, next, state, learner, recentActive });
    }
    return { ...base, progress };
  }
}

function throwIfRefused(res: StepResult): void {
  switch (res) {
    case 'ok':
      return;
    case 'dropped':
      throw new EtceteraError('ERR_RAFT_PROPOSAL_DROPPED');
    case 'confPending':
      throw new EtceteraError('ERR_RAFT_CONF_CHANGE_PENDING');
    case 'invalidConf':
      throw new EtceteraError('ERR_RAFT_INVALID_CONF_CHANGE');
  }
}
