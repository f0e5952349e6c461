/**
 * The nemesis: faults and operator actions injected while clients run. Each kind runs on
 * its own random schedule, so a seed mixes them differently:
 *   - partitions (isolate one member, or split in two), healed after a while;
 *   - crashes of up to a minority of members, restarted after a while;
 *   - leader transfers to a random voter;
 *   - membership cycles: add a learner, promote it, remove some voter (maybe the leader).
 */
import { ConfChangeType, type NodeId } from '../../../src/raft/types.js';
import { chance, pick, type Rand, randInt } from '../rand.js';
import type { SimMember } from './member.js';

export interface NemesisHost {
  at(delayMs: number, run: () => void): void;
  readonly members: ReadonlyMap<NodeId, SimMember>;
  /** Ids of current voters and learners, as the leader (or any live member) sees them. */
  voters(): NodeId[];
  leader(): SimMember | undefined;
  partition(groups: NodeId[][]): void;
  heal(): void;
  crash(m: SimMember): void;
  restart(m: SimMember): void;
  nextId(): NodeId;
}

export class Nemesis {
  private stopped = false;
  /** A learner waiting to be promoted, once it has been added. */
  private joining: NodeId | undefined = undefined;

  constructor(
    private readonly host: NemesisHost,
    private readonly rand: Rand,
    private readonly size: number,
  ) {
    this.every(3_000, 15_000, () => this.partition());
    this.every(4_000, 20_000, () => this.crash());
    this.every(8_000, 25_000, () => this.transfer());
    this.every(6_000, 20_000, () => this.membership());
  }

  stop(): void {
    this.stopped = true;
  }

  private every(lo: number, hi: number, act: () => void): void {
    this.host.at(randInt(this.rand, lo, hi), () => {
      if (this.stopped) return;
      act();
      this.every(lo, hi, act);
    });
  }

  private partition(): void {
    const ids = [...this.host.members.keys()];
    if (chance(this.rand, 0.5)) {
      // Often the leader itself: a deposed leader that does not know it yet is the classic
      // source of stale reads and lost writes.
      const leader = this.host.leader()?.id;
      const lone = leader !== undefined && chance(this.rand, 0.6) ? leader : pick(this.rand, ids);
      this.host.partition([[lone], ids.filter((i) => i !== lone)]);
    } else {
      const side = ids.filter(() => chance(this.rand, 0.5));
      this.host.partition([side, ids.filter((i) => !side.includes(i))]);
    }
    this.host.at(randInt(this.rand, 500, 12_000), () => this.host.heal());
  }

  private crash(): void {
    const all = [...this.host.members.values()];
    const down = all.filter((m) => !m.up).length;
    if (down >= Math.floor((this.size - 1) / 2) && down > 0) return;
    const m = pick(
      this.rand,
      all.filter((x) => x.up),
    );
    if (m === undefined) return;
    if (chance(this.rand, 0.5)) {
      // Crash in the middle of the member's next write (Ready taken, nothing persisted);
      // the world restarts it a while after.
      m.crashOnNextWrite = true;
      return;
    }
    this.host.crash(m);
    this.host.at(randInt(this.rand, 200, 5_000), () => this.host.restart(m));
  }

  private transfer(): void {
    const leader = this.host.leader();
    const to = pick(this.rand, this.host.voters());
    if (leader === undefined || to === undefined) return;
    leader.input((n) => {
      try {
        n.transferLeader(to);
      } catch {
        // no leader known at this instant: nothing to do
      }
    });
  }

  /** One step of the cycle add learner → promote → remove a voter. */
  private membership(): void {
    const leader = this.host.leader();
    if (leader === undefined) return;
    const conf = leader.conf()!;
    let change: { type: ConfChangeType; nodeId: NodeId };
    if (this.joining !== undefined && conf.learners.includes(this.joining)) {
      change = { type: ConfChangeType.AddVoter, nodeId: this.joining };
    } else if (conf.voters.length > this.size) {
      change = { type: ConfChangeType.RemoveNode, nodeId: pick(this.rand, conf.voters) };
      this.joining = undefined;
    } else if (this.joining === undefined || !conf.voters.includes(this.joining)) {
      this.joining = this.host.nextId();
      change = { type: ConfChangeType.AddLearner, nodeId: this.joining };
    } else {
      return;
    }
    leader.input((n) => {
      try {
        n.proposeConfChange(change);
      } catch {
        // pending or no longer leader: the cycle retries on its next turn
      }
    });
  }
}
