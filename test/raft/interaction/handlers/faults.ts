/**
 * Faults and maintenance:
 *   isolate ID                    — cut member ID off from everyone (until heal)
 *   heal                          — undo every isolate
 *   restart ID                    — crash and restart: unpersisted state is lost
 *   compact ID INDEX              — snapshot member ID's state machine at INDEX, compact the log
 *   report-snapshot ID TO finish|failure, report-unreachable ID TO
 */
import { LogIndex, NodeId } from '../../../../src/raft/types.js';
import { enc } from '../../helpers.js';
import { type Command, type InteractionEnv, intArg } from '../env.js';

export function isolate(env: InteractionEnv, cmd: Command): string[] {
  env.isolated.add(NodeId(intArg(cmd, 0)));
  return ['ok'];
}

export function heal(env: InteractionEnv): string[] {
  env.isolated.clear();
  return ['ok'];
}

export function restart(env: InteractionEnv, cmd: Command): string[] {
  const p = env.peer(intArg(cmd, 0));
  env.wire = env.wire.filter((m) => m.from !== p.id && m.to !== p.id);
  p.restart();
  return ['ok'];
}

export function compact(env: InteractionEnv, cmd: Command): string[] {
  const p = env.peer(intArg(cmd, 0));
  const at = LogIndex(intArg(cmd, 1));
  p.storage.createSnapshot(at, p.raft.tracker.conf, enc(`snap@${at}`));
  p.storage.compact(at);
  return ['ok'];
}

export function reportSnapshot(env: InteractionEnv, cmd: Command): string[] {
  const status = cmd.args[2] === 'failure' ? 'failure' : 'finish';
  env.peer(intArg(cmd, 0)).node.reportSnapshot(NodeId(intArg(cmd, 1)), status);
  return ['ok'];
}

export function reportUnreachable(env: InteractionEnv, cmd: Command): string[] {
  env.peer(intArg(cmd, 0)).node.reportUnreachable(NodeId(intArg(cmd, 1)));
  return ['ok'];
}
