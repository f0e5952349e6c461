/**
 * ProgressTracker: the current membership, the leader's per-member Progress, and the votes
 * of the current election.
 *
 * Invariant: `progress` has exactly one entry per member of `conf` (voters and learners),
 * including this member itself when it is a member.
 */
import { Progress } from './progress.js';
import { committedIndex, type VoteResult, voteResult } from './quorum.js';
import type { ByteSize, ConfState, LogIndex, NodeId } from './types.js';

export class ProgressTracker {
  conf: ConfState = { voters: [], learners: [] };
  readonly progress = new Map<NodeId, Progress>();
  readonly votes = new Map<NodeId, boolean>();
  private readonly maxInflight: number;
  private readonly maxInflightBytes: ByteSize;

  constructor(maxInflight: number, maxInflightBytes: ByteSize) {
    this.maxInflight = maxInflight;
    this.maxInflightBytes = maxInflightBytes;
  }

  /**
   * Switch to membership `cs`. Members that stay keep their progress (a promoted learner
   * just stops being a learner); new members start probing at `next`.
   */
  setConf(cs: ConfState, next: LogIndex): void {
    const asc = (a: NodeId, b: NodeId) => a - b;
    this.conf = { voters: [...cs.voters].sort(asc), learners: [...cs.learners].sort(asc) };
    const keep = new Set<NodeId>([...cs.voters, ...cs.learners]);
    for (const id of [...this.progress.keys()]) if (!keep.has(id)) this.progress.delete(id);
    for (const id of cs.voters) this.ensure(id, next, false);
    for (const id of cs.learners) this.ensure(id, next, true);
  }

  private ensure(id: NodeId, next: LogIndex, learner: boolean): void {
    const pr = this.progress.get(id);
    if (pr !== undefined) {
      pr.learner = learner;
      return;
    }
    this.progress.set(id, new Progress(next, learner, this.maxInflight, this.maxInflightBytes));
  }

  /**
   * Forget everything learned about followers (a new term): every member goes back to
   * probing at `next`. Learner flags stay.
   */
  resetProgress(next: LogIndex): void {
    for (const [id, pr] of this.progress) {
      this.progress.set(
        id,
        new Progress(next, pr.learner, this.maxInflight, this.maxInflightBytes),
      );
    }
  }

  /** Every member's id but `self`, voters then learners, each ascending (stable order). */
  others(self: NodeId): NodeId[] {
    return [...this.conf.voters, ...this.conf.learners].filter((id) => id !== self);
  }

  isVoter(id: NodeId): boolean {
    return this.conf.voters.includes(id);
  }

  isMember(id: NodeId): boolean {
    return this.progress.has(id);
  }

  /** The largest index a quorum of voters has stored. */
  committed(): LogIndex {
    return committedIndex(this.conf.voters, (id) => this.progress.get(id)!.match);
  }

  recordVote(id: NodeId, granted: boolean): void {
    if (!this.votes.has(id)) this.votes.set(id, granted);
  }

  tallyVotes(): VoteResult {
    return voteResult(this.conf.voters, this.votes);
  }

  resetVotes(): void {
    this.votes.clear();
  }

  /**
   * Check quorum: whether a quorum of voters was heard from since the last call (`self`
   * always counts). Clears the marks for the next round.
   */
  quorumActive(self: NodeId): boolean {
    const active = new Map<NodeId, boolean>();
    for (const id of this.conf.voters) {
      const pr = this.progress.get(id)!;
      active.set(id, id === self || pr.recentActive);
    }
    for (const [id, pr] of this.progress) pr.recentActive = id === self;
    return voteResult(this.conf.voters, active) === 'won';
  }
}
