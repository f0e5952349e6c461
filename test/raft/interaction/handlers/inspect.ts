/**
 * Read-only views:
 *   raft-state      — one line per member: role, term, leader, commit, applied
 *   raft-log ID     — the entries in member ID's storage
 *   status ID       — the leader's view of each member's progress
 */
import { describeEntry } from '../../../../src/raft/describe.js';
import { LogIndex } from '../../../../src/raft/types.js';
import { type Command, type InteractionEnv, intArg } from '../env.js';

export function raftState(env: InteractionEnv): string[] {
  return env.ids([]).map((id) => {
    const r = env.peers.get(id)!.raft;
    const iso = env.isolated.has(id) ? ' (isolated)' : '';
    return `${id}: ${r.role} term=${r.term} lead=${r.lead} commit=${r.log.committed} applied=${r.log.applied}${iso}`;
  });
}

export function raftLog(env: InteractionEnv, cmd: Command): string[] {
  const s = env.peer(intArg(cmd, 0)).storage;
  const first = s.firstIndex();
  const ents = s.entries(first, LogIndex(s.lastIndex() + 1));
  const snap = s.snapshot().metadata;
  const head = snap.index > 0 ? [`snapshot ${snap.term}/${snap.index}`] : [];
  return [...head, ...ents.map(describeEntry)].concat(
    head.length + ents.length === 0 ? ['empty'] : [],
  );
}

export function status(env: InteractionEnv, cmd: Command): string[] {
  const st = env.peer(intArg(cmd, 0)).node.status();
  if (st.progress === undefined) return [`${st.id} is not the leader (${st.softState.role})`];
  return [...st.progress].map(
    ([id, p]) => `${id}: ${p.state} match=${p.match} next=${p.next}${p.learner ? ' learner' : ''}`,
  );
}
