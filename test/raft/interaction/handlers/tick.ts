/**
 * tick-election ID — tick member ID for one (base) election timeout (10 ticks).
 * tick-heartbeat ID — tick member ID for one heartbeat interval (1 tick).
 * tick ID... n=N — tick each member N times (default 1).
 * Members are created with random() = 0.5, so a follower campaigns after 15 quiet ticks
 * while its leader lease lasts 10: `tick 3 n=10` lets member 3 grant votes without
 * campaigning itself.
 * Nothing is processed: follow with process-ready or stabilize.
 */
import { type Command, type InteractionEnv, intArg, intArgs } from '../env.js';

export function tick(env: InteractionEnv, cmd: Command): string[] {
  const n = Number(cmd.opts.get('n') ?? '1');
  for (const id of env.ids(intArgs(cmd)))
    for (let i = 0; i < n; i++) env.peers.get(id)!.node.tick();
  return ['ok'];
}

function tickN(
  env: InteractionEnv,
  cmd: Command,
  ticks: (e: number, h: number) => number,
): string[] {
  const p = env.peer(intArg(cmd, 0));
  const n = ticks(p.raft.electionTimeout, p.raft.heartbeatTimeout);
  for (let i = 0; i < n; i++) p.node.tick();
  return ['ok'];
}

export const tickElection = (env: InteractionEnv, cmd: Command) => tickN(env, cmd, (e) => e);
export const tickHeartbeat = (env: InteractionEnv, cmd: Command) => tickN(env, cmd, (_, h) => h);
