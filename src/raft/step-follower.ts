/**
 * The follower's (and learner's) handler: accept the leader's log and commit index,
 * forward requests to the leader, campaign on the leader's `timeoutNow`.
 */
import type { Raft, StepResult } from './raft.js';
import {
  LogIndex,
  type Message,
  type MsgApp,
  type MsgHeartbeat,
  type MsgSnap,
  NONE,
  Term,
} from './types.js';

export function stepFollower(r: Raft, m: Message): StepResult {
  switch (m.type) {
    case 'prop':
      if (r.lead === NONE || r.disableProposalForwarding) return 'dropped';
      r.send({ ...m, from: r.id, to: r.lead });
      return 'ok';
    case 'readIndex':
      if (r.lead === NONE) return 'dropped';
      r.send({ ...m, from: r.id, to: r.lead });
      return 'ok';
    case 'transferLeader':
      if (r.lead === NONE) return 'dropped';
      r.send({ ...m, from: r.id, to: r.lead, term: r.term });
      return 'ok';
    case 'app':
      r.electionElapsed = 0;
      r.lead = m.from;
      handleAppendEntries(r, m);
      return 'ok';
    case 'heartbeat':
      r.electionElapsed = 0;
      r.lead = m.from;
      handleHeartbeat(r, m);
      return 'ok';
    case 'snap':
      r.electionElapsed = 0;
      r.lead = m.from;
      handleSnapshot(r, m);
      return 'ok';
    case 'timeoutNow':
      // The leader hands over: campaign at once, skipping pre-vote and voters' leases.
      r.hup('transfer');
      return 'ok';
    case 'readIndexResp':
      r.readStates.push({ index: m.index, context: m.context });
      return 'ok';
    default:
      return 'ok';
  }
}

function ack(r: Raft, to: MsgApp['from'], index: LogIndex): void {
  r.send({
    type: 'appResp',
    from: r.id,
    to,
    term: r.term,
    index,
    reject: false,
    rejectHint: LogIndex(0),
    logTerm: Term(0),
  });
}

export function handleAppendEntries(r: Raft, m: MsgApp): void {
  if (m.index < r.log.committed) {
    // Everything up to our commit already matches any leader's log: say so.
    ack(r, m.from, r.log.committed);
    return;
  }
  const lastNew = r.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
  if (lastNew !== undefined) {
    ack(r, m.from, lastNew);
    return;
  }
  // Mismatch at m.index. Hint the largest index whose term is <= m.logTerm: no entry
  // between it and m.index can match, so the leader skips them in one step.
  const probe = LogIndex(Math.min(m.index, r.log.lastIndex()));
  const [hintIndex, hintTerm] = r.log.findConflictByTerm(probe, m.logTerm);
  r.send({
    type: 'appResp',
    from: r.id,
    to: m.from,
    term: r.term,
    index: m.index,
    reject: true,
    rejectHint: hintIndex,
    logTerm: hintTerm,
  });
}

export function handleHeartbeat(r: Raft, m: MsgHeartbeat): void {
  // The leader never sends a commit past our match, so our log has it; a commit past our
  // log can only be bad input, and committing a guess would be worse than waiting.
  if (m.commit <= r.log.lastIndex()) r.log.commitTo(m.commit);
  r.send({ type: 'heartbeatResp', from: r.id, to: m.from, term: r.term, context: m.context });
}

export function handleSnapshot(r: Raft, m: MsgSnap): void {
  const s = m.snapshot.metadata;
  if (s.index <= r.log.committed) {
    ack(r, m.from, r.log.committed); // stale or duplicate
    return;
  }
  if (r.log.matchTerm(s.index, s.term)) {
    // We already have the snapshot's last entry, so everything before it: just commit.
    // (Entries after it may still differ from the leader's: ack only the commit.)
    r.log.commitTo(s.index);
    ack(r, m.from, r.log.committed);
    return;
  }
  r.log.restore(m.snapshot);
  r.tracker.setConf(s.confState, LogIndex(r.log.lastIndex() + 1));
  r.confChanged = true;
  ack(r, m.from, r.log.lastIndex());
}
