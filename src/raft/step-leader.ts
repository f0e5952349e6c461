/**
 * The leader's message handler: proposals, reads, transfers, and the answers of its
 * followers. Term reconciliation has already happened in Raft.step.
 */
import { confChangeProblem, decodeConfChange } from './confchange.js';
import { VoteResult, voteResult } from './quorum.js';
import type { Raft, StepResult } from './raft.js';
import { leaderReadIndex, respondRead } from './read-index.js';
import { handleAppendResponse, sendAppend } from './replication.js';
import {
  EntryType,
  type Message,
  type MsgHeartbeatResp,
  type MsgProp,
  type MsgTransferLeader,
  NONE,
  type NodeId,
  ProgressState,
} from './types.js';

export function stepLeader(r: Raft, m: Message): StepResult {
  switch (m.type) {
    case 'prop':
      return propose(r, m);
    case 'readIndex':
      leaderReadIndex(r, m);
      return 'ok';
    case 'transferLeader':
      transferLeader(r, m);
      return 'ok';
    case 'appResp': {
      const pr = r.tracker.progress.get(m.from);
      if (pr !== undefined) handleAppendResponse(r, m.from, pr, m);
      return 'ok';
    }
    case 'heartbeatResp':
      handleHeartbeatResponse(r, m);
      return 'ok';
    default:
      return 'ok';
  }
}

function propose(r: Raft, m: MsgProp): StepResult {
  if (!r.tracker.isMember(r.id) || r.leadTransferee !== NONE) return 'dropped';
  let confIndexOffset = -1;
  for (let i = 0; i < m.entries.length; i++) {
    const e = m.entries[i]!;
    if (e.type !== EntryType.ConfChange) continue;
    // One change at a time: the previous one must be applied (membership known) first.
    if (confIndexOffset >= 0 || r.pendingConfIndex > r.log.applied) return 'confPending';
    let problem: string | undefined;
    try {
      problem = confChangeProblem(r.tracker.conf, decodeConfChange(e.data));
    } catch {
      problem = 'undecodable';
    }
    if (problem !== undefined) return 'invalidConf';
    confIndexOffset = i;
  }
  const before = r.log.lastIndex();
  if (!r.appendEntries(m.entries)) return 'dropped';
  if (confIndexOffset >= 0) r.pendingConfIndex = (before + 1 + confIndexOffset) as typeof before;
  r.needBcast = true; // batched: sent when the next Ready is collected
  return 'ok';
}

function transferLeader(r: Raft, m: MsgTransferLeader): void {
  const to = m.transferee;
  const pr = r.tracker.progress.get(to);
  if (pr === undefined || pr.learner || to === r.id) return;
  if (r.leadTransferee !== NONE) {
    if (r.leadTransferee === to) return;
    r.abortLeaderTransfer();
  }
  // The transfer must finish within one election timeout, or it is abandoned.
  r.electionElapsed = 0;
  r.leadTransferee = to;
  if (pr.match === r.log.lastIndex()) r.sendTimeoutNow(to);
  else sendAppend(r, to);
}

function handleHeartbeatResponse(r: Raft, m: MsgHeartbeatResp): void {
  const pr = r.tracker.progress.get(m.from);
  if (pr === undefined) return;
  pr.recentActive = true;
  pr.probeSent = false;
  // Pipelined messages may all have been lost: free a slot so one more can go out and
  // reveal the gap (the follower then rejects, and we fall back to probing).
  if (pr.state === ProgressState.Replicate && pr.inflights.full()) pr.inflights.freeFirst();
  if (pr.match < r.log.lastIndex()) sendAppend(r, m.from);
  if (m.context.length === 0) return;
  const acks = r.readOnly.recvAck(m.from, m.context);
  if (acks === undefined || !hasQuorum(r.tracker.conf.voters, acks)) return;
  for (const rs of r.readOnly.advance(m.context)) respondRead(r, rs.from, rs.index, rs.context);
}

function hasQuorum(voters: readonly NodeId[], acks: ReadonlySet<NodeId>): boolean {
  const votes = new Map<NodeId, boolean>();
  for (const id of acks) votes.set(id, true);
  return voteResult(voters, votes) === VoteResult.Won;
}
