/**
 * A deterministic in-process network of TestPeers for multi-member unit tests.
 * `stabilize()` runs every member's Ready and delivers messages until nothing moves.
 * Faults: `drop(from, to, p)` drops a fraction of a link's messages (seeded), `cut(a, b)`
 * drops both directions, `isolate(id)` cuts a member off, `ignore(type)` drops a message
 * type everywhere, `hook` sees (and may veto) each message, `recover()` clears all faults.
 */
import type { ConfState, Message, MessageType, NodeId } from '../../src/raft/types.js';
import { NodeId as id } from '../../src/raft/types.js';
import { type PeerOptions, TestPeer } from './peer.js';
import { type Rand, seededRandom } from './rand.js';

export class Network {
  readonly peers = new Map<NodeId, TestPeer>();
  /** Every message delivered (after filtering), in order. */
  readonly delivered: Message[] = [];
  hook: ((m: Message) => boolean) | undefined = undefined;
  private readonly dropRates = new Map<string, number>();
  private readonly ignored = new Set<MessageType>();
  private readonly rand: Rand;
  private queue: Message[] = [];

  /** Members 1..n (or the given ids), all voters, bootstrapped identically. */
  constructor(ids: number[] | number, options: PeerOptions = {}, seed = 1) {
    const list = typeof ids === 'number' ? Array.from({ length: ids }, (_, i) => i + 1) : ids;
    const conf: ConfState = { voters: list.map(id), learners: [] };
    for (const n of list) this.peers.set(id(n), TestPeer.bootstrap(n, conf, options));
    this.rand = seededRandom(seed);
  }

  peer(n: number): TestPeer {
    const p = this.peers.get(id(n));
    if (p === undefined) throw new Error(`no peer ${n}`);
    return p;
  }

  add(p: TestPeer): void {
    this.peers.set(p.id, p);
  }

  /** Queue messages and run until quiet. */
  send(...msgs: Message[]): void {
    this.queue.push(...msgs);
    this.stabilize();
  }

  stabilize(maxRounds = 10_000): void {
    for (let round = 0; round < maxRounds; round++) {
      let moved = false;
      for (const p of this.peers.values()) {
        const got = p.handleReady();
        if (got !== undefined) {
          moved = true;
          this.queue.push(...got.out);
        }
      }
      const batch = this.queue;
      this.queue = [];
      for (const m of batch) {
        if (!this.passes(m)) continue;
        moved = true;
        this.delivered.push(m);
        this.peers.get(m.to)?.node.step(m);
      }
      if (!moved) return;
    }
    throw new Error('network did not stabilize');
  }

  private passes(m: Message): boolean {
    if (this.ignored.has(m.type)) return false;
    const rate = this.dropRates.get(`${m.from}-${m.to}`) ?? 0;
    if (rate > 0 && (rate >= 1 || this.rand() < rate)) return false;
    return this.hook === undefined || this.hook(m);
  }

  drop(from: number, to: number, rate: number): void {
    this.dropRates.set(`${from}-${to}`, rate);
  }

  cut(a: number, b: number): void {
    this.drop(a, b, 1);
    this.drop(b, a, 1);
  }

  isolate(n: number): void {
    for (const other of this.peers.keys()) if (other !== n) this.cut(n, other);
  }

  ignore(type: MessageType): void {
    this.ignored.add(type);
  }

  recover(): void {
    this.dropRates.clear();
    this.ignored.clear();
    this.hook = undefined;
  }

  /** Tick one member `n` times, stabilizing after each tick. */
  tick(n: number, times = 1): void {
    for (let i = 0; i < times; i++) {
      this.peer(n).node.tick();
      this.stabilize();
    }
  }

  /** Tick every member once per round, `times` rounds, stabilizing after each round. */
  tickAll(times = 1): void {
    for (let i = 0; i < times; i++) {
      for (const p of this.peers.values()) p.node.tick();
      this.stabilize();
    }
  }

  /** The member every non-crashed member agrees is leader, if any. */
  leader(): TestPeer | undefined {
    for (const p of this.peers.values()) if (p.raft.role === 'leader') return p;
    return undefined;
  }
}
