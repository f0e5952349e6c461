/**
 * The state of one interaction script: its members, the messages on the wire (sent but not
 * yet delivered), and the partition. Handlers (./handlers/*.ts) act on it and return the
 * lines to print.
 */
import type { Message } from '../../../src/raft/types.js';
import { NodeId } from '../../../src/raft/types.js';
import type { TestPeer } from '../peer.js';

export class InteractionEnv {
  readonly peers = new Map<NodeId, TestPeer>();
  /** Sent, not yet delivered, in send order. */
  wire: Message[] = [];
  /** Members cut off from everyone: their traffic is dropped at delivery. */
  readonly isolated = new Set<NodeId>();

  peer(n: number): TestPeer {
    const p = this.peers.get(NodeId(n));
    if (p === undefined) throw new Error(`no member ${n}`);
    return p;
  }

  /** Ids in ascending order, or the given ones. */
  ids(args: readonly number[]): NodeId[] {
    if (args.length > 0) return args.map(NodeId);
    return [...this.peers.keys()].sort((a, b) => a - b);
  }

  cutOff(m: Message): boolean {
    return this.isolated.has(m.from) || this.isolated.has(m.to);
  }
}

/** A parsed command: positional arguments and key=value options. */
export interface Command {
  readonly name: string;
  readonly args: readonly string[];
  readonly opts: ReadonlyMap<string, string>;
}

export type Handler = (env: InteractionEnv, cmd: Command) => string[];

/** Positional argument `i` as an integer (throws a readable error when missing). */
export function intArg(cmd: Command, i: number): number {
  const s = cmd.args[i];
  const n = Number(s);
  if (s === undefined || !Number.isInteger(n))
    throw new Error(`${cmd.name}: argument ${i + 1} must be an integer`);
  return n;
}

export function intArgs(cmd: Command, from = 0): number[] {
  return cmd.args.slice(from).map((_, k) => intArg(cmd, from + k));
}

export function idList(s: string | undefined): NodeId[] {
  if (s === undefined || s === '') return [];
  return s.split(',').map((x) => NodeId(Number(x)));
}

/** Run `fn`; a thrown EtceteraError prints as `error: CODE`. */
export function orError(fn: () => void): string[] {
  try {
    fn();
    return ['ok'];
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === undefined) throw e;
    return [`error: ${code}`];
  }
}

export const indent = (lines: string[]): string[] => lines.map((l) => `  ${l}`);

/**
 * Collapse repeats so heartbeat storms stay readable: a run of one identical line becomes
 * that line with `(xN)`; a run of an identical block of 2-4 lines (one heartbeat per
 * follower, round after round) becomes the block once plus `(previous K lines xN)`.
 */
export function collapseRepeats(lines: readonly string[]): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    let best = { period: 1, times: 1 };
    for (let period = 1; period <= 4; period++) {
      const times = repeatsAt(lines, i, period);
      if (times > 1 && period * times > best.period * best.times) best = { period, times };
    }
    const block = lines.slice(i, i + best.period);
    if (best.times === 1) out.push(...block);
    else if (best.period === 1) out.push(`${block[0]} (x${best.times})`);
    else out.push(...block, `(previous ${best.period} lines x${best.times})`);
    i += best.period * best.times;
  }
  return out;
}

/** How many times the block lines[i, i+period) repeats back to back from i. */
function repeatsAt(lines: readonly string[], i: number, period: number): number {
  if (i + period > lines.length) return 0;
  let times = 1;
  for (;;) {
    const at = i + times * period;
    if (at + period > lines.length) return times;
    for (let k = 0; k < period; k++) if (lines[at + k] !== lines[i + k]) return times;
    times++;
  }
}
