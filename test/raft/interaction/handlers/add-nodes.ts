/**
 * add-nodes N [voters=1,2,3] [learners=4] [prevote=false] [checkquorum=false]
 *           [max-inflight=N] [max-msg-size=BYTES]
 * Adds N members with the next free ids, bootstrapped with the given membership (default:
 * every member, old and new, as a voter).
 */

import { describeConfState } from '../../../../src/raft/describe.js';
import { NodeId } from '../../../../src/raft/types.js';
import { TestPeer } from '../../peer.js';
import { type Command, type InteractionEnv, idList, intArg } from '../env.js';

export function addNodes(env: InteractionEnv, cmd: Command): string[] {
  const count = intArg(cmd, 0);
  const first = env.peers.size === 0 ? 1 : Math.max(...env.peers.keys()) + 1;
  const ids = Array.from({ length: count }, (_, k) => NodeId(first + k));
  const all = [...env.peers.keys(), ...ids];
  const conf = {
    voters: cmd.opts.has('voters') ? idList(cmd.opts.get('voters')) : all,
    learners: idList(cmd.opts.get('learners')),
  };
  const num = (k: string) => (cmd.opts.has(k) ? Number(cmd.opts.get(k)) : undefined);
  const options = {
    random: () => 0.5,
    preVote: cmd.opts.get('prevote') !== 'false',
    checkQuorum: cmd.opts.get('checkquorum') !== 'false',
    ...(num('max-inflight') !== undefined ? { maxInflightMsgs: num('max-inflight')! } : {}),
    ...(num('max-msg-size') !== undefined ? { maxSizePerMsg: num('max-msg-size')! as never } : {}),
  };
  for (const id of ids) env.peers.set(id, TestPeer.bootstrap(id, conf, options));
  return ids.map((id) => `${id}: ${describeConfState(conf)}`);
}
