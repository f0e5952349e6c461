/**
 * The handler of pre-candidates and candidates. A message from a leader of our term means
 * the election is lost: follow it. Vote answers are counted only in the matching phase.
 */
import { VoteResult } from './quorum.js';
import type { Raft, StepResult } from './raft.js';
import { bcastAppend } from './replication.js';
import { handleAppendEntries, handleHeartbeat, handleSnapshot } from './step-follower.js';
import { type Message, NONE, Role } from './types.js';

export function stepCandidate(r: Raft, m: Message): StepResult {
  switch (m.type) {
    case 'prop':
    case 'readIndex':
    case 'transferLeader':
      return 'dropped'; // no leader to serve or forward to
    case 'app':
      r.becomeFollower(m.term, m.from);
      handleAppendEntries(r, m);
      return 'ok';
    case 'heartbeat':
      r.becomeFollower(m.term, m.from);
      handleHeartbeat(r, m);
      return 'ok';
    case 'snap':
      r.becomeFollower(m.term, m.from);
      handleSnapshot(r, m);
      return 'ok';
    case 'voteResp':
    case 'preVoteResp': {
      // A late answer from the other phase (pre-vote vs vote) says nothing about this one.
      if ((m.type === 'preVoteResp') !== (r.role === Role.PreCandidate)) return 'ok';
      r.tracker.recordVote(m.from, !m.reject);
      const result = r.tracker.tallyVotes();
      if (result === VoteResult.Won) {
        if (r.role === Role.PreCandidate) {
          r.campaign('election');
        } else {
          r.becomeLeader();
          bcastAppend(r);
        }
      } else if (result === VoteResult.Lost) {
        r.becomeFollower(r.term, NONE);
      }
      return 'ok';
    }
    default:
      return 'ok';
  }
}
