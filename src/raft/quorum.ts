/**
 * Majority quorum arithmetic over a set of voters. Pure functions, no state.
 *
 * With n voters a quorum is floor(n/2) + 1. The committed index is the largest index that
 * a quorum has: sort the voters' match indexes descending and take the quorum-th one.
 * Example: matches {5, 9, 7} → sorted 9, 7, 5 → quorum 2 → 7 is on 9's and 7's members.
 */
import { LogIndex, type NodeId } from './types.js';

export function quorumSize(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

/** The largest index held by a quorum of `voters`, given each voter's match. */
export function committedIndex(
  voters: readonly NodeId[],
  matchOf: (id: NodeId) => LogIndex,
): LogIndex {
  // No voters would mean no quorum can ever form; conf changes forbid it. Be explicit anyway.
  if (voters.length === 0) return LogIndex(0);
  const matches = voters.map(matchOf).sort((a, b) => b - a);
  return matches[quorumSize(voters.length) - 1]!;
}

export const VoteResult = { Won: 'won', Lost: 'lost', Pending: 'pending' } as const;
export type VoteResult = (typeof VoteResult)[keyof typeof VoteResult];

/** The outcome of an election so far: granted/rejected votes among `voters`. */
export function voteResult(
  voters: readonly NodeId[],
  votes: ReadonlyMap<NodeId, boolean>,
): VoteResult {
  let granted = 0;
  let rejected = 0;
  for (const v of voters) {
    const g = votes.get(v);
    if (g === true) granted++;
    else if (g === false) rejected++;
  }
  const q = quorumSize(voters.length);
  if (granted >= q) return VoteResult.Won;
  if (voters.length - rejected < q) return VoteResult.Lost;
  return VoteResult.Pending;
}
