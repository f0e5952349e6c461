/**
 * The leader's replication: choosing what to send each follower (entries, a snapshot, or
 * a heartbeat) under its Progress and flow control, and advancing the commit index.
 */
import { isEtceteraError } from '../errors.js';
import type { Progress } from './progress.js';
import type { Raft } from './raft.js';
import { releasePendingReadIndex } from './read-index.js';
import { LogIndex, type NodeId, ProgressState, type Snapshot, type Term } from './types.js';
import { EMPTY_BYTES, entriesSize } from './util.js';

/**
 * Send `to` the next entries it needs, if its flow control allows. With no new entries,
 * send an empty `app` only when `sendIfEmpty` (to probe, or to carry a newer commit).
 * Returns whether a message went out.
 */
export function maybeSendAppend(r: Raft, to: NodeId, sendIfEmpty: boolean): boolean {
  const pr = r.tracker.progress.get(to);
  if (pr === undefined || pr.isPaused()) return false;
  const prevIndex = LogIndex(pr.next - 1);
  const prevTerm = r.log.term(prevIndex);
  if (prevTerm === undefined || pr.next < r.log.firstIndex()) {
    // The entries it needs are compacted away.
    return maybeSendSnapshot(r, to, pr);
  }
  const ents = r.log.entriesFrom(pr.next, r.maxSizePerMsg);
  if (ents.length === 0 && !sendIfEmpty) return false;
  const commit = r.log.committed;
  r.send({
    type: 'app',
    from: r.id,
    to,
    term: r.term,
    index: prevIndex,
    logTerm: prevTerm,
    entries: ents,
    commit,
  });
  const last = ents.length > 0 ? ents[ents.length - 1]!.index : prevIndex;
  pr.sentEntries(ents.length, last, entriesSize(ents));
  pr.sentCommit = commit;
  return true;
}

export function sendAppend(r: Raft, to: NodeId): void {
  maybeSendAppend(r, to, true);
}

function maybeSendSnapshot(r: Raft, to: NodeId, pr: Progress): boolean {
  // Do not ship a snapshot to a member that may be down; wait until it answers something.
  if (!pr.recentActive) return false;
  let snapshot: Snapshot;
  try {
    snapshot = r.log.storage.snapshot();
  } catch (e) {
    if (isEtceteraError(e, 'ERR_RAFT_SNAPSHOT_TEMPORARILY_UNAVAILABLE')) return false;
    throw e;
  }
  if (snapshot.metadata.index === 0) return false;
  pr.becomeSnapshot(snapshot.metadata.index);
  r.send({ type: 'snap', from: r.id, to, term: r.term, snapshot });
  return true;
}

/**
 * Send every follower what it needs. `commitOnly`: the reason is a new commit index, so a
 * follower with nothing new gets an empty `app` only if it has not yet been sent this commit.
 */
export function bcastAppend(r: Raft, commitOnly = false): void {
  for (const id of r.tracker.others(r.id)) {
    const pr = r.tracker.progress.get(id)!;
    maybeSendAppend(r, id, !commitOnly || pr.sentCommit < r.log.committed);
  }
}

/**
 * Heartbeat every follower. A non-empty `context` makes it a ReadIndex confirmation round.
 * The commit sent never exceeds the follower's match: it may not have later entries.
 */
export function sendHeartbeatRound(r: Raft, context: Uint8Array | undefined): void {
  for (const to of r.tracker.others(r.id)) {
    const pr = r.tracker.progress.get(to)!;
    const commit = LogIndex(Math.min(pr.match, r.log.committed));
    r.send({
      type: 'heartbeat',
      from: r.id,
      to,
      term: r.term,
      commit,
      context: context ?? EMPTY_BYTES,
    });
  }
}

/**
 * Advance the commit index to what a quorum has, but only through an entry of the current
 * term: an old-term entry on a quorum can still be overwritten (§5.4.2, figure 8), while a
 * current-term entry on a quorum cannot, and it commits everything before it.
 */
export function maybeCommit(r: Raft): boolean {
  const mci = r.tracker.committed();
  if (mci <= r.log.committed || r.log.term(mci) !== r.term) return false;
  r.log.commitTo(mci);
  return true;
}

/** The follower acknowledged (or rejected) an `app`: update its progress and go on. */
export function handleAppendResponse(r: Raft, from: NodeId, pr: Progress, m: AppRespFields): void {
  pr.recentActive = true;
  // Honest followers only ack what this leader sent; ignore anything else, never trust it.
  if (m.index > r.log.lastIndex()) return;
  if (m.reject) {
    let hint = m.rejectHint;
    if (m.logTerm > 0) hint = r.log.findConflictByTerm(m.rejectHint, m.logTerm)[0];
    if (pr.maybeDecrTo(m.index, hint)) {
      if (pr.state === ProgressState.Replicate) pr.becomeProbe();
      sendAppend(r, from);
    }
    return;
  }
  const probeMatch = pr.match === m.index && pr.state === ProgressState.Probe;
  if (!pr.maybeUpdate(m.index) && !probeMatch) return;
  if (pr.state === ProgressState.Probe) {
    pr.becomeReplicate();
  } else if (pr.state === ProgressState.Snapshot) {
    if (pr.match + 1 >= r.log.firstIndex()) {
      pr.becomeProbe();
      pr.becomeReplicate();
    }
  } else {
    pr.inflights.freeLE(m.index);
  }
  if (maybeCommit(r)) {
    releasePendingReadIndex(r);
    r.needBcast = true; // the new commit goes out with the next Ready, once per follower
  }
  // Fill the pipeline: keep sending while there are entries and flow control allows.
  while (maybeSendAppend(r, from, false)) {}
  if (from === r.leadTransferee && pr.match === r.log.lastIndex()) r.sendTimeoutNow(from);
}

interface AppRespFields {
  readonly index: LogIndex;
  readonly reject: boolean;
  readonly rejectHint: LogIndex;
  readonly logTerm: Term;
}
