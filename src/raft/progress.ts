/**
 * Progress: what the leader knows of one follower's log, and how it replicates to it.
 *
 *   probe     — match unknown. One `app` at a time (`probeSent` pauses until an answer or
 *               a heartbeat response), stepping `next` back on each rejection.
 *   replicate — match known. `app` messages are pipelined: `next` advances optimistically
 *               on each send, bounded by the in-flight caps.
 *   snapshot  — the follower needs compacted entries. Nothing else is sent until the
 *               snapshot is acknowledged or reported failed.
 *
 * Invariants: match < next; in replicate, every in-flight message ends below next.
 */
import { Inflights } from './inflights.js';
import { type ByteSize, LogIndex, ProgressState } from './types.js';

export class Progress {
  /** Highest index known to match the leader's log. */
  match = LogIndex(0);
  /** Next index to send. */
  next: LogIndex;
  state: ProgressState = ProgressState.Probe;
  /** Probe state: an `app` is out and unanswered; do not send another. */
  probeSent = false;
  /** Snapshot state: the index of the snapshot in flight. */
  pendingSnapshot = LogIndex(0);
  /** Heard from since the last check-quorum round. */
  recentActive = false;
  /** The last commit index sent in an `app`; avoids redundant commit-only messages. */
  sentCommit = LogIndex(0);
  learner: boolean;
  readonly inflights: Inflights;

  constructor(next: LogIndex, learner: boolean, maxInflight: number, maxInflightBytes: ByteSize) {
    this.next = next;
    this.learner = learner;
    this.inflights = new Inflights(maxInflight, maxInflightBytes);
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = LogIndex(0);
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    // Leaving snapshot state: the follower has at least the snapshot (or will be re-sent it).
    const from = this.state === ProgressState.Snapshot ? this.pendingSnapshot : 0;
    this.resetState(ProgressState.Probe);
    this.next = LogIndex(Math.max(this.match + 1, from + 1));
  }

  becomeReplicate(): void {
    this.resetState(ProgressState.Replicate);
    this.next = LogIndex(this.match + 1);
  }

  becomeSnapshot(snapshotIndex: LogIndex): void {
    this.resetState(ProgressState.Snapshot);
    this.pendingSnapshot = snapshotIndex;
  }

  /** Account for an `app` carrying `n` entries ending at `last`. */
  sentEntries(n: number, last: LogIndex, bytes: ByteSize): void {
    if (this.state === ProgressState.Replicate) {
      if (n > 0) {
        this.next = LogIndex(last + 1);
        this.inflights.add(last, bytes);
      }
    } else if (this.state === ProgressState.Probe) {
      this.probeSent = true;
    }
  }

  /** An ack up to `n`. Returns whether match moved (which also unpauses a probe). */
  maybeUpdate(n: LogIndex): boolean {
    if (n <= this.match) return false;
    this.probeSent = false;
    this.match = n;
    if (this.next <= n) this.next = LogIndex(n + 1);
    return true;
  }

  /**
   * A rejection of the `app` after `rejected`, with the follower's hint. Returns false when
   * the rejection is stale (an answer to an older message); otherwise steps `next` back.
   */
  maybeDecrTo(rejected: LogIndex, hint: LogIndex): boolean {
    if (this.state === ProgressState.Replicate) {
      if (rejected <= this.match) return false;
      this.next = LogIndex(this.match + 1);
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = LogIndex(Math.max(Math.min(rejected, hint + 1), this.match + 1));
    this.probeSent = false;
    return true;
  }

  /** Whether the leader must hold back `app` messages to this follower. */
  isPaused(): boolean {
    switch (this.state) {
      case ProgressState.Probe:
        return this.probeSent;
      case ProgressState.Replicate:
        return this.inflights.full();
      case ProgressState.Snapshot:
        return true;
    }
  }
}
