/**
 * deliver-msgs [drop=true] [ID...] — deliver (or with drop=true, discard) every message on
 * the wire addressed to the given members (default: all), in send order. Messages sent
 * before an `isolate` and still on the wire are dropped at delivery.
 */
import { describeMessage } from '../../../../src/raft/describe.js';
import type { NodeId } from '../../../../src/raft/types.js';
import { type Command, collapseRepeats, type InteractionEnv, indent, intArgs } from '../env.js';

export function deliverTo(env: InteractionEnv, ids: readonly NodeId[], drop = false): string[] {
  const out: string[] = [];
  for (const id of ids) {
    const mine = env.wire.filter((m) => m.to === id);
    if (mine.length === 0) continue;
    env.wire = env.wire.filter((m) => m.to !== id);
    const lines: string[] = [];
    for (const m of mine) {
      if (drop || env.cutOff(m)) {
        lines.push(`dropped: ${describeMessage(m)}`);
        continue;
      }
      lines.push(describeMessage(m));
      env.peers.get(id)?.node.step(m);
    }
    out.push(`> ${id} receiving messages`, ...indent(collapseRepeats(lines)));
  }
  return out;
}

export function deliverMsgs(env: InteractionEnv, cmd: Command): string[] {
  const out = deliverTo(env, env.ids(intArgs(cmd)), cmd.opts.get('drop') === 'true');
  return out.length > 0 ? out : ['ok'];
}
