/**
 * Raft: one member's consensus state machine. Pure and synchronous: input comes through
 * `step`, `tick` and `hup`; output accumulates in `msgs`, `msgsAfterPersist`, `readStates`
 * and the log's unstable part, which RawNode packs into a Ready.
 *
 * The role-specific behaviour lives in function fields swapped on role change:
 * `stepRole` (step-leader.ts, step-candidate.ts, step-follower.ts) and `tickRole`.
 * This file holds what every role shares: term handling, voting, role transitions, the
 * timers, membership changes and the leader's bookkeeping on durability.
 *
 * Durability rules the core relies on (the Ready contract):
 *   - a vote request leaves only after the candidate's own vote is durable
 *     (msgsAfterPersist), so a crash cannot let this member vote twice in one term;
 *   - vote grants and append acks leave only after the state they promise is durable;
 *   - the leader counts its own log toward commit only up to what the driver confirmed
 *     durable through advance() (`onStable`), never its unstable tail.
 */
import { RaftLog } from './log.js';
import { applyConfChangeEntry } from './membership.js';
import { VoteResult } from './quorum.js';
import { releasePendingReadIndex } from './read-index.js';
import { ReadOnly } from './read-only.js';
import { bcastAppend, maybeCommit, sendHeartbeatRound } from './replication.js';
import { stepCandidate } from './step-candidate.js';
import { stepFollower } from './step-follower.js';
import { stepLeader } from './step-leader.js';
import { ProgressTracker } from './tracker.js';
import {
  ByteSize,
  type Entry,
  EntryType,
  type HardState,
  LogIndex,
  type Message,
  type MsgReadIndex,
  type MsgVote,
  NONE,
  type NodeId,
  PayloadSize,
  type RaftConfig,
  type ReadState,
  Role,
  type SoftState,
  Term,
} from './types.js';
import { invariant, payloadSize } from './util.js';

/** What a step did with a local request; network input ignores it. */
export type StepResult = 'ok' | 'dropped' | 'confPending' | 'invalidConf';
export type StepFn = (r: Raft, m: Message) => StepResult;
type TickFn = (r: Raft) => void;
export type CampaignKind = 'preElection' | 'election' | 'transfer';

/**
 * Deliberately unsafe switches for tests that prove the simulator's checkers catch broken
 * rules. Never set outside such tests.
 */
export interface UnsafeTestKnobs {
  /** Grant every vote request that passes the log check, even a second one in a term. */
  voteTwicePerTerm: boolean;
}

export class Raft {
  readonly id: NodeId;
  term: Term;
  vote: NodeId;
  lead: NodeId = NONE;
  role: Role = Role.Follower;
  readonly log: RaftLog;
  readonly tracker: ProgressTracker;
  readOnly = new ReadOnly();

  electionElapsed = 0;
  heartbeatElapsed = 0;
  randomizedElectionTimeout = 0;
  readonly electionTimeout: number;
  readonly heartbeatTimeout: number;
  private readonly random: () => number;

  readonly checkQuorum: boolean;
  readonly preVote: boolean;
  readonly disableProposalForwarding: boolean;
  readonly maxSizePerMsg: ByteSize;
  private readonly maxUncommittedSize: PayloadSize;

  /** Leader: the member leadership is being handed to, or NONE. */
  leadTransferee: NodeId = NONE;
  /** Leader: index of the latest conf change that may be unapplied; blocks another. */
  pendingConfIndex = LogIndex(0);
  /** Leader: payload bytes proposed in this term and not yet applied. */
  uncommittedSize = 0;
  /** Leader: ReadIndex requests waiting for the first commit of this term. */
  pendingReadIndex: MsgReadIndex[] = [];
  /** Membership changed since the last Ready. */
  confChanged = false;
  /**
   * Leader: new entries or a new commit index wait to be broadcast. Sending is deferred to
   * the next Ready so that everything proposed (or committed) in between travels in one
   * `app` per follower: that is the batching.
   */
  needBcast = false;

  msgs: Message[] = [];
  msgsAfterPersist: Message[] = [];
  readStates: ReadState[] = [];

  stepRole: StepFn = stepFollower;
  tickRole: TickFn = tickElection;
  readonly unsafe: UnsafeTestKnobs = { voteTwicePerTerm: false };

  constructor(c: RaftConfig) {
    this.id = c.id;
    this.electionTimeout = c.electionTick;
    this.heartbeatTimeout = c.heartbeatTick;
    this.random = c.random;
    this.checkQuorum = c.checkQuorum ?? true;
    this.preVote = c.preVote ?? true;
    this.disableProposalForwarding = c.disableProposalForwarding ?? false;
    this.maxSizePerMsg = c.maxSizePerMsg ?? ByteSize(1024 * 1024);
    this.maxUncommittedSize = c.maxUncommittedEntriesSize ?? PayloadSize(0);
    this.tracker = new ProgressTracker(c.maxInflightMsgs ?? 256, c.maxInflightBytes ?? ByteSize(0));
    this.log = new RaftLog(
      c.storage,
      c.maxCommittedSizePerReady ?? ByteSize(64 * 1024 * 1024),
      c.applied,
    );
    const { hardState, confState } = c.storage.initialState();
    this.term = hardState.term;
    this.vote = hardState.vote;
    this.tracker.setConf(confState, LogIndex(this.log.lastIndex() + 1));
    this.replayAppliedConfChanges();
    this.becomeFollower(this.term, NONE);
  }

  /**
   * Membership = the snapshot's, plus every conf change applied since. Those entries are
   * committed and stable, and were applied before the restart, so replay them here.
   */
  private replayAppliedConfChanges(): void {
    const lo = this.log.firstIndex();
    if (this.log.applied < lo) return;
    for (const e of this.log.slice(lo, LogIndex(this.log.applied + 1))) {
      if (e.type === EntryType.ConfChange) applyConfChangeEntry(this, e);
    }
    this.confChanged = false;
  }

  softState(): SoftState {
    return { leader: this.lead, role: this.role };
  }

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  // --- output ---

  /**
   * Queue a message. Those that promise durable state (vote requests carrying the
   * candidate's own vote, vote answers, append acks) wait for the Ready's write.
   */
  send(m: Message): void {
    const t = m.type;
    if (t === 'vote' || t === 'voteResp' || t === 'appResp') this.msgsAfterPersist.push(m);
    else this.msgs.push(m);
  }

  // --- role transitions ---

  private reset(term: Term): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout =
      this.electionTimeout + Math.floor(this.random() * this.electionTimeout);
    this.leadTransferee = NONE;
    this.tracker.resetVotes();
    this.tracker.resetProgress(LogIndex(this.log.lastIndex() + 1));
    this.pendingConfIndex = LogIndex(0);
    this.uncommittedSize = 0;
    this.readOnly = new ReadOnly();
    this.pendingReadIndex = [];
  }

  becomeFollower(term: Term, lead: NodeId): void {
    this.stepRole = stepFollower;
    this.reset(term);
    this.tickRole = tickElection;
    this.lead = lead;
    this.role = Role.Follower;
  }

  becomePreCandidate(): void {
    invariant(this.role !== Role.Leader, 'leader -> pre-candidate');
    // Term and vote stay: a pre-election only asks whether an election could be won.
    this.stepRole = stepCandidate;
    this.tracker.resetVotes();
    this.tickRole = tickElection;
    this.lead = NONE;
    this.role = Role.PreCandidate;
  }

  becomeCandidate(): void {
    invariant(this.role !== Role.Leader, 'leader -> candidate');
    this.stepRole = stepCandidate;
    this.reset(Term(this.term + 1));
    this.tickRole = tickElection;
    this.vote = this.id;
    this.role = Role.Candidate;
  }

  becomeLeader(): void {
    invariant(this.role !== Role.Follower, 'follower -> leader');
    this.stepRole = stepLeader;
    this.reset(this.term);
    this.tickRole = tickHeartbeat;
    this.lead = this.id;
    this.role = Role.Leader;
    const self = this.tracker.progress.get(this.id)!;
    self.becomeReplicate();
    self.match = this.log.stableLastIndex();
    self.recentActive = true;
    // Any entry in the log may be an unapplied conf change: block new ones until applied.
    this.pendingConfIndex = this.log.lastIndex();
    // The no-op: entries of earlier terms commit only under an entry of this term (§5.4.2).
    this.appendEntries([
      { term: Term(0), index: LogIndex(0), type: EntryType.Normal, data: new Uint8Array(0) },
    ]);
  }

  /** Stamp and append proposals. False when the uncommitted-size cap refuses them. */
  appendEntries(ents: readonly Entry[]): boolean {
    const size = payloadSize(ents);
    const cap = this.maxUncommittedSize;
    if (cap > 0 && this.uncommittedSize > 0 && this.uncommittedSize + size > cap) return false;
    this.uncommittedSize += size;
    let index = this.log.lastIndex();
    const stamped = ents.map((e): Entry => {
      index = LogIndex(index + 1);
      return { term: this.term, index, type: e.type, data: e.data };
    });
    this.log.append(stamped);
    return true;
  }

  // --- elections ---

  /** Whether this member may become leader: a voter with no snapshot pending. */
  promotable(): boolean {
    return this.tracker.isVoter(this.id) && this.log.unstable.snapshot === undefined;
  }

  /** Start an election unless this member cannot or should not. */
  hup(kind: CampaignKind): void {
    if (this.role === Role.Leader || !this.promotable()) return;
    // Membership may be about to change under us: wait until committed changes are applied.
    if (this.hasUnappliedConfChanges()) return;
    this.campaign(kind);
  }

  private hasUnappliedConfChanges(): boolean {
    const { applied, committed } = this.log;
    if (committed <= applied) return false;
    const lo = LogIndex(Math.max(applied + 1, this.log.firstIndex()));
    return this.log.slice(lo, LogIndex(committed + 1)).some((e) => e.type === EntryType.ConfChange);
  }

  campaign(kind: CampaignKind): void {
    const pre = kind === 'preElection';
    if (pre) this.becomePreCandidate();
    else this.becomeCandidate();
    // A pre-vote asks about the term an election would use, without moving to it.
    const term = pre ? Term(this.term + 1) : this.term;
    this.tracker.recordVote(this.id, true);
    if (this.tracker.tallyVotes() === VoteResult.Won) {
      // A single voter wins on its own vote.
      if (pre) this.campaign('election');
      else this.becomeLeader();
      return;
    }
    for (const to of this.tracker.conf.voters) {
      if (to === this.id) continue;
      this.send({
        type: pre ? 'preVote' : 'vote',
        from: this.id,
        to,
        term,
        index: this.log.lastIndex(),
        logTerm: this.log.lastTerm(),
        transfer: kind === 'transfer',
      });
    }
  }

  /** Answer a vote or pre-vote request (its term is already reconciled with ours). */
  handleVoteRequest(m: MsgVote): void {
    const pre = m.type === 'preVote';
    const canVote =
      this.vote === m.from ||
      (this.vote === NONE && this.lead === NONE) ||
      (pre && m.term > this.term) ||
      (!pre && this.unsafe.voteTwicePerTerm);
    const type = pre ? 'preVoteResp' : 'voteResp';
    if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
      // Answer in the request's term: a pre-candidate counts grants for the term it asked about.
      this.send({ type, from: this.id, to: m.from, term: m.term, reject: false });
      if (!pre) {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      this.send({ type, from: this.id, to: m.from, term: this.term, reject: true });
    }
  }

  // --- step: term handling shared by every role ---

  step(m: Message): StepResult {
    if (m.term === 0) {
      // Local input or a request forwarded by a follower: no term to reconcile.
    } else if (m.term > this.term) {
      if (!this.acceptHigherTerm(m)) return 'ok';
    } else if (m.term < this.term) {
      this.answerStaleTerm(m);
      return 'ok';
    }
    if (m.type === 'vote' || m.type === 'preVote') {
      this.handleVoteRequest(m);
      return 'ok';
    }
    return this.stepRole(this, m);
  }

  /** A message from a higher term. Returns false when it must be ignored entirely. */
  private acceptHigherTerm(m: Message): boolean {
    if (m.type === 'vote' || m.type === 'preVote') {
      // Leader lease: while we hear from a live leader, a disruptive candidate (say, one
      // rejoining after a partition) must not depose it. A transfer is the leader's wish.
      const inLease =
        this.checkQuorum && this.lead !== NONE && this.electionElapsed < this.electionTimeout;
      if (inLease && !m.transfer) return false;
    }
    if (m.type === 'preVote') return true; // a pre-vote never moves our term
    if (m.type === 'preVoteResp' && !m.reject) return true; // a grant for our pre-campaign
    const leaderMsg = m.type === 'app' || m.type === 'heartbeat' || m.type === 'snap';
    this.becomeFollower(m.term, leaderMsg ? m.from : NONE);
    return true;
  }

  private answerStaleTerm(m: Message): void {
    if ((this.checkQuorum || this.preVote) && (m.type === 'heartbeat' || m.type === 'app')) {
      // A leader cut off by a partition would otherwise never learn the new term: with
      // check-quorum or pre-vote nobody disturbs it with a vote request.
      this.send({
        type: 'appResp',
        from: this.id,
        to: m.from,
        term: this.term,
        index: LogIndex(0),
        reject: false,
        rejectHint: LogIndex(0),
        logTerm: Term(0),
      });
    } else if (m.type === 'preVote') {
      this.send({ type: 'preVoteResp', from: this.id, to: m.from, term: this.term, reject: true });
    }
  }

  // --- timers ---

  tick(): void {
    this.tickRole(this);
  }

  // --- leader transfer ---

  abortLeaderTransfer(): void {
    this.leadTransferee = NONE;
  }

  sendTimeoutNow(to: NodeId): void {
    this.send({ type: 'timeoutNow', from: this.id, to, term: this.term });
  }

  // --- hooks called by RawNode.advance ---

  /** The driver made the log durable up to `stableLastIndex()`: count the leader's copy. */
  onStable(): void {
    if (this.role !== Role.Leader) return;
    const self = this.tracker.progress.get(this.id);
    if (self === undefined) return;
    if (self.maybeUpdate(this.log.stableLastIndex()) && maybeCommit(this)) {
      releasePendingReadIndex(this);
      this.needBcast = true;
    }
  }

  /** Send what `needBcast` deferred (called when a Ready is collected). */
  flushBroadcast(): void {
    if (!this.needBcast) return;
    this.needBcast = false;
    if (this.role === Role.Leader) bcastAppend(this, true);
  }

  reduceUncommittedSize(ents: readonly Entry[]): void {
    this.uncommittedSize = Math.max(0, this.uncommittedSize - payloadSize(ents));
  }
}

// --- tick handlers ---

function tickElection(r: Raft): void {
  r.electionElapsed++;
  if (r.promotable() && r.electionElapsed >= r.randomizedElectionTimeout) {
    r.electionElapsed = 0;
    r.hup(r.preVote ? 'preElection' : 'election');
  }
}

function tickHeartbeat(r: Raft): void {
  r.heartbeatElapsed++;
  r.electionElapsed++;
  if (r.electionElapsed >= r.electionTimeout) {
    r.electionElapsed = 0;
    if (r.checkQuorum && !r.tracker.quorumActive(r.id)) {
      // Cut off from a quorum: stop accepting writes that could never commit.
      r.becomeFollower(r.term, NONE);
      return;
    }
    // A transfer that did not finish within an election timeout is abandoned.
    if (r.leadTransferee !== NONE) r.abortLeaderTransfer();
  }
  if (r.heartbeatElapsed >= r.heartbeatTimeout) {
    r.heartbeatElapsed = 0;
    sendHeartbeatRound(r, r.readOnly.lastPendingContext());
  }
}
