/**
 * The simulated application: a key-value map of strings, applied from committed entries.
 * Commands carry (client, seq) so that a command appearing twice in the log (a forwarded
 * proposal the network duplicated) takes effect once: each client's commands apply in
 * increasing seq order and anything at or below its last applied seq is skipped.
 * Its state survives a crash (the apply is durable with its index, as a member's store is).
 */
import type { Entry } from '../../../src/raft/types.js';
import { LogIndex } from '../../../src/raft/types.js';

export interface PutCommand {
  readonly c: number;
  readonly s: number;
  readonly k: string;
  readonly v: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodePut(cmd: PutCommand): Uint8Array {
  return encoder.encode(JSON.stringify(cmd));
}

/**
 * Members share the entry objects the simulated network carries, so each command's bytes
 * are decoded once and the result cached on the byte array itself.
 */
const decoded = new WeakMap<Uint8Array, PutCommand>();

export function decodePut(data: Uint8Array): PutCommand {
  let cmd = decoded.get(data);
  if (cmd === undefined) {
    cmd = JSON.parse(decoder.decode(data)) as PutCommand;
    decoded.set(data, cmd);
  }
  return cmd;
}

export class KvState {
  readonly data = new Map<string, string>();
  readonly lastSeq = new Map<number, number>();
  applied = LogIndex(0);

  /** Apply one committed entry; returns the command if it took effect. */
  apply(e: Entry): PutCommand | undefined {
    this.applied = e.index;
    if (e.type !== 'normal' || e.data.length === 0) return undefined;
    const cmd = decodePut(e.data);
    if ((this.lastSeq.get(cmd.c) ?? 0) >= cmd.s) return undefined;
    this.lastSeq.set(cmd.c, cmd.s);
    this.data.set(cmd.k, cmd.v);
    return cmd;
  }

  encode(): Uint8Array {
    return encoder.encode(JSON.stringify({ d: [...this.data], s: [...this.lastSeq] }));
  }

  restore(bytes: Uint8Array, index: LogIndex): void {
    const o = JSON.parse(decoder.decode(bytes)) as { d: [string, string][]; s: [number, number][] };
    this.data.clear();
    this.lastSeq.clear();
    for (const [k, v] of o.d) this.data.set(k, v);
    for (const [c, s] of o.s) this.lastSeq.set(c, s);
    this.applied = index;
  }
}
