/**
 * Commands that call one RawNode method on member ID:
 *   campaign ID | propose ID DATA | read-index ID CTX | transfer-leader ID TO
 *   propose-conf-change ID addVoter|addLearner|removeNode NODE
 * They print `ok`, or `error: CODE` when the call is refused.
 */
import { type ConfChangeType, NodeId } from '../../../../src/raft/types.js';
import { enc } from '../../helpers.js';
import { type Command, type InteractionEnv, intArg, orError } from '../env.js';

export function campaign(env: InteractionEnv, cmd: Command): string[] {
  return orError(() => env.peer(intArg(cmd, 0)).node.campaign());
}

export function propose(env: InteractionEnv, cmd: Command): string[] {
  return orError(() => env.peer(intArg(cmd, 0)).node.propose(enc(cmd.args[1] ?? '')));
}

export function readIndex(env: InteractionEnv, cmd: Command): string[] {
  return orError(() => env.peer(intArg(cmd, 0)).node.readIndex(enc(cmd.args[1] ?? '')));
}

export function transferLeader(env: InteractionEnv, cmd: Command): string[] {
  return orError(() => env.peer(intArg(cmd, 0)).node.transferLeader(NodeId(intArg(cmd, 1))));
}

export function proposeConfChange(env: InteractionEnv, cmd: Command): string[] {
  const type = cmd.args[1] as ConfChangeType;
  const nodeId = NodeId(intArg(cmd, 2));
  return orError(() => env.peer(intArg(cmd, 0)).node.proposeConfChange({ type, nodeId }));
}
