/**
 * The client workload: a few clients, each with one operation at a time, doing puts
 * (through propose) and gets (through readIndex) on a handful of keys at random members.
 * Every operation is recorded for the linearizability check:
 *   - a put that the member acknowledged (applied) → ok with its return time;
 *   - a put whose proposal was accepted but not acknowledged before a timeout or a crash
 *     of its member → outcome unknown (ret = Infinity), it may or may not have happened;
 *   - a put or get refused at once (ERR_RAFT_PROPOSAL_DROPPED) did not happen: not recorded;
 *   - a get served after its read index was applied → ok with the value read; a get that
 *     timed out constrains nothing and is not recorded.
 */

import type { NodeId } from '../../../src/raft/types.js';
import type { HistoryOp } from '../../lincheck/index.js';
import { chance, pick, type Rand, randInt } from '../rand.js';
import { encodePut, type PutCommand } from './kv.js';
import type { SimMember } from './member.js';

const KEYS = ['a', 'b', 'c'];

interface Pending {
  readonly client: number;
  readonly member: NodeId;
  readonly history: HistoryOp;
  readonly timer: { cancelled: boolean };
}

export interface ClientHost {
  readonly now: number;
  at(delayMs: number, run: () => void): void;
  /** A live member to talk to (the leader as often as the clients can guess it). */
  chooseMember(): SimMember | undefined;
}

export class Clients {
  readonly history: HistoryOp[] = [];
  /** (client, seq) of every put acknowledged to a client. */
  readonly acked: PutCommand[] = [];
  private readonly puts = new Map<string, Pending>(); // `${c}.${s}`
  private readonly gets = new Map<string, Pending>(); // read context
  private readonly seq: number[];
  private readonly sticky: (SimMember | undefined)[];
  private stopped = false;

  constructor(
    private readonly host: ClientHost,
    private readonly rand: Rand,
    count: number,
    private readonly timeoutMs: number,
  ) {
    this.seq = new Array<number>(count).fill(0);
    this.sticky = new Array<SimMember | undefined>(count).fill(undefined);
    for (let c = 0; c < count; c++) this.host.at(randInt(rand, 0, 500), () => this.next(c));
  }

  /** Pause between a client's operations: light load keeps each seed cheap. */
  private think(): number {
    return randInt(this.rand, 100, 1_500);
  }

  stop(): void {
    this.stopped = true;
  }

  private next(c: number): void {
    if (this.stopped) return;
    // Clients stick to the member that last answered them, as a connection would, even
    // after it lost leadership: exactly the client a stale leader could mislead.
    const sticky = this.sticky[c];
    const m = sticky?.up && chance(this.rand, 0.8) ? sticky : this.host.chooseMember();
    if (m === undefined || !this.start(c, m)) {
      this.sticky[c] = undefined;
      this.host.at(randInt(this.rand, 50, 300), () => this.next(c)); // refused: try again later
      return;
    }
    this.sticky[c] = m;
  }

  /** Start one operation; false if the member refused it on the spot. */
  private start(c: number, m: SimMember): boolean {
    const s = ++this.seq[c]!;
    const key = pick(this.rand, KEYS);
    const isPut = chance(this.rand, 0.5);
    const ctx = `${c}.${s}`;
    let refused = false;
    m.input((node) => {
      try {
        if (isPut) node.propose(encodePut({ c, s, k: key, v: ctx }));
        else node.readIndex(new TextEncoder().encode(ctx));
      } catch {
        refused = true;
      }
    });
    if (refused) return false;
    const op = isPut ? { kind: 'put' as const, key, value: ctx } : { kind: 'get' as const, key };
    const history: HistoryOp = { client: c, op, call: this.host.now, ret: Infinity, ok: false };
    const p: Pending = { client: c, member: m.id, history, timer: { cancelled: false } };
    (isPut ? this.puts : this.gets).set(ctx, p);
    this.host.at(this.timeoutMs, () => {
      if (!p.timer.cancelled) this.giveUp(ctx, isPut);
    });
    return true;
  }

  /** No answer in time (or the member crashed): a put's outcome is unknown. */
  private giveUp(ctx: string, isPut: boolean): void {
    const p = (isPut ? this.puts : this.gets).get(ctx);
    if (p === undefined) return;
    (isPut ? this.puts : this.gets).delete(ctx);
    p.timer.cancelled = true;
    this.sticky[p.client] = undefined;
    if (isPut) this.history.push(p.history);
    this.host.at(this.think(), () => this.next(p.client));
  }

  /** Member `m` applied `cmd`: answer the client if it asked this member. */
  onPut(m: SimMember, cmd: PutCommand): void {
    const ctx = `${cmd.c}.${cmd.s}`;
    const p = this.puts.get(ctx);
    if (p === undefined || p.member !== m.id) return;
    this.puts.delete(ctx);
    p.timer.cancelled = true;
    this.history.push({ ...p.history, ret: this.host.now, ok: true });
    this.acked.push(cmd);
    this.host.at(this.think(), () => this.next(p.client));
  }

  /** Member `m` may now serve the read `ctx` from its state machine. */
  onRead(m: SimMember, ctx: string): void {
    const p = this.gets.get(ctx);
    if (p === undefined || p.member !== m.id || p.history.op.kind !== 'get') return;
    this.gets.delete(ctx);
    p.timer.cancelled = true;
    const output = m.kv.data.get(p.history.op.key) ?? null;
    this.history.push({ ...p.history, ret: this.host.now, ok: true, output });
    this.host.at(this.think(), () => this.next(p.client));
  }

  /** Member `id` crashed: whatever its clients were waiting for will never be answered. */
  onCrash(id: NodeId): void {
    for (const [ctx, p] of [...this.puts]) if (p.member === id) this.giveUp(ctx, true);
    for (const [ctx, p] of [...this.gets]) if (p.member === id) this.giveUp(ctx, false);
  }

  /** End of run: every put still pending has an unknown outcome. */
  finish(): void {
    for (const ctx of [...this.puts.keys()]) this.giveUp(ctx, true);
    for (const ctx of [...this.gets.keys()]) this.giveUp(ctx, false);
  }

  get clientCount(): number {
    return this.seq.length;
  }
}
