/**
 * The simulated network: every message gets a random delay (occasionally a long one, so
 * messages overtake each other), may be dropped or duplicated, and is lost if a partition
 * separates the two members at send or at delivery time, or if the receiver is down.
 * Snapshot sends are reported back to the sender as the real transport would.
 */
import type { Message, NodeId } from '../../../src/raft/types.js';
import { chance, type Rand, randInt } from '../rand.js';

export interface NetPolicy {
  readonly dropRate: number;
  readonly dupRate: number;
  readonly longDelayRate: number;
  readonly delayMs: readonly [number, number];
  readonly longDelayMs: readonly [number, number];
}

export class SimNet {
  /** Partition: member → group number; members in different groups cannot talk. */
  private groups = new Map<NodeId, number>();
  sent = 0;
  delivered = 0;

  constructor(
    private readonly rand: Rand,
    private readonly policy: NetPolicy,
  ) {}

  partition(groups: readonly (readonly NodeId[])[]): void {
    this.groups = new Map();
    groups.forEach((g, k) => {
      for (const id of g) this.groups.set(id, k);
    });
  }

  heal(): void {
    this.groups = new Map();
  }

  get partitioned(): boolean {
    return this.groups.size > 0;
  }

  connected(a: NodeId, b: NodeId): boolean {
    if (this.groups.size === 0) return true;
    return (this.groups.get(a) ?? -1) === (this.groups.get(b) ?? -1);
  }

  /**
   * How many copies of a message the network carries: 0 (dropped or partitioned), 1, or 2
   * (duplicated). Connectivity at delivery time is checked again by the caller.
   */
  copies(m: Message): number {
    this.sent++;
    if (!this.connected(m.from, m.to) || chance(this.rand, this.policy.dropRate)) return 0;
    return chance(this.rand, this.policy.dupRate) ? 2 : 1;
  }

  /** The delay of one copy, in virtual ms. */
  delay(): number {
    const [lo, hi] = chance(this.rand, this.policy.longDelayRate)
      ? this.policy.longDelayMs
      : this.policy.delayMs;
    return randInt(this.rand, lo, hi);
  }
}
