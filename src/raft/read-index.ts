/**
 * The leader's side of ReadIndex: starting a confirmation round, answering confirmed reads,
 * and releasing reads that waited for the first commit of the term.
 *
 * Why a read at index i is linearizable: i is the leader's commit index when the request
 * arrived; the heartbeat round proves that no other leader had been elected at that time
 * (a quorum still followed this one), so nothing newer than i can have been committed and
 * acknowledged anywhere. A member serving the read once it has applied i therefore sees
 * every write that completed before the request began.
 */
import type { Raft } from './raft.js';
import { sendHeartbeatRound } from './replication.js';
import { type LogIndex, type MsgReadIndex, NONE, type NodeId } from './types.js';

/** Whether an entry of the current term is committed: only then is the commit index known. */
export function committedEntryInCurrentTerm(r: Raft): boolean {
  return r.log.term(r.log.committed) === r.term;
}

/** Answer a confirmed read: locally as a ReadState, or to the follower that asked. */
export function respondRead(r: Raft, from: NodeId, index: LogIndex, context: Uint8Array): void {
  if (from === NONE || from === r.id) {
    r.readStates.push({ index, context });
    return;
  }
  r.send({ type: 'readIndexResp', from: r.id, to: from, term: r.term, index, context });
}

/** Handle a ReadIndex request on the leader. */
export function leaderReadIndex(r: Raft, m: MsgReadIndex): void {
  if (!committedEntryInCurrentTerm(r)) {
    // A new leader does not know the commit index yet: reads wait for its no-op.
    r.pendingReadIndex.push(m);
    return;
  }
  startReadRound(r, m);
}

function startReadRound(r: Raft, m: MsgReadIndex): void {
  if (r.tracker.conf.voters.length === 1 && r.tracker.isVoter(r.id)) {
    respondRead(r, m.from, r.log.committed, m.context); // a quorum of one: itself
    return;
  }
  r.readOnly.add(r.log.committed, m.context, m.from);
  r.readOnly.recvAck(r.id, m.context);
  sendHeartbeatRound(r, m.context);
}

/** The commit index moved: reads waiting for the term's first commit may start. */
export function releasePendingReadIndex(r: Raft): void {
  if (r.pendingReadIndex.length === 0 || !committedEntryInCurrentTerm(r)) return;
  const pending = r.pendingReadIndex;
  r.pendingReadIndex = [];
  for (const m of pending) startReadRound(r, m);
}
