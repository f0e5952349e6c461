/**
 * process-ready [ID...] — each member (default: all) handles one Ready as a driver would:
 * persist, put both message lists on the wire, apply, advance. Prints each Ready.
 * Messages to or from an isolated member are lost as they are sent.
 */
import { describeReady } from '../../../../src/raft/describe.js';
import type { NodeId } from '../../../../src/raft/types.js';
import { type Command, collapseRepeats, type InteractionEnv, indent, intArgs } from '../env.js';

export function processReadyOf(env: InteractionEnv, ids: readonly NodeId[]): string[] {
  const out: string[] = [];
  for (const id of ids) {
    const got = env.peers.get(id)?.handleReady();
    if (got === undefined) continue;
    out.push(
      `> ${id} handling Ready`,
      ...indent(collapseRepeats(describeReady(got.rd).split('\n'))),
    );
    env.wire.push(...got.out.filter((m) => !env.cutOff(m)));
  }
  return out;
}

export function processReady(env: InteractionEnv, cmd: Command): string[] {
  const out = processReadyOf(env, env.ids(intArgs(cmd)));
  return out.length > 0 ? out : ['ok'];
}
