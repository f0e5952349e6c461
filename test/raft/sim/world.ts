/**
 * The simulated world of one seed: a group of 3 or 5 members on a virtual clock and
 * network, a client workload, and a nemesis, all driven by one seeded PRNG. `runSeed`
 * plays the scenario, then heals everything, lets the group settle, and checks the end
 * state: a leader, every member caught up and equal, every acknowledged write applied, and
 * a linearizable client history.
 */
import { decodeConfChange } from '../../../src/raft/confchange.js';
import { MemoryStorage } from '../../../src/raft/storage/memory-storage.js';
import { type ConfState, type Entry, type Message, NodeId } from '../../../src/raft/types.js';
import { checkLinearizable } from '../../lincheck/index.js';
import { pick, type Rand, randInt, seededRandom } from '../rand.js';
import { SafetyChecker, SimViolation } from './checker.js';
import { Clients } from './clients.js';
import type { PutCommand } from './kv.js';
import { type MemberHost, SimMember } from './member.js';
import { Nemesis } from './nemesis.js';
import { SimNet } from './net.js';
import { EventQueue } from './queue.js';

export interface SimOptions {
  /** Virtual milliseconds of faults and client load before the settle phase. */
  readonly durationMs: number;
  /** Virtual milliseconds to settle (no faults) before the end checks. */
  readonly settleMs: number;
  /** Test-only: let members grant two votes per term (the checkers must notice). */
  readonly unsafeVoteTwice?: boolean;
  /** Let seeds without pre-vote settle longer (default true; see LATE_SETTLE_MS). */
  readonly lateSettle?: boolean;
}

export interface SimResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly error?: string;
  readonly stats: SimStats;
}

/** What one seed exercised (summed over seeds in the test output). */
export interface SimStats {
  members: number;
  messages: number;
  ops: number;
  acked: number;
  /** Distinct (term, leader) pairs: elections won. */
  leaders: number;
  crashes: number;
  /** Readys whose write was in flight when their member crashed. */
  lostReadies: number;
  snapshots: number;
  confChanges: number;
  transfers: number;
  /** Seeds (of those summed) that needed more than the settle phase to elect a stable leader. */
  lateSettles: number;
}

/**
 * One tick is 100 ms of virtual time (the member's defaults: heartbeat 100 ms, election timeout 1000 ms).
 * Each seed draws its own heartbeat (1-3 ticks) and election timeout (10-30 ticks).
 */
const TICK_MS = 100;
/** How often the pairwise log-matching check runs (virtual ms). */
const LOG_CHECK_MS = 20_000;
/**
 * Without pre-vote, a member whose log is behind can sit at a higher term than the rest and
 * keep campaigning: followers in their leader's lease ignore its votes, so each new leader is
 * elected at a lower term and deposed by that member's next answer (the same happens with
 * etcd's raft; pre-vote, which members run with, prevents it). The group gets out once one
 * up-to-date member's random timeout falls first, which takes a few rounds; a settle phase
 * of fixed length can end before. Such seeds may settle this much longer, and are counted.
 */
const LATE_SETTLE_MS = 60_000;
const LATE_SETTLE_STEP_MS = 5_000;

export class World implements MemberHost {
  readonly queue = new EventQueue();
  readonly checker = new SafetyChecker();
  readonly members = new Map<NodeId, SimMember>();
  readonly net: SimNet;
  readonly clients: Clients;
  readonly nemesis: Nemesis;
  readonly snapshotEvery: number;
  readonly keepAfterCompaction: number;
  readonly unsafeVoteTwice: boolean;
  private readonly rand: Rand;
  private readonly size: number;
  private lastId: number;
  private lastConfIndex = 0;
  readonly counts = {
    crashes: 0,
    lostReadies: 0,
    snapshots: 0,
    confChanges: 0,
    transfers: 0,
    lateSettles: 0,
  };
  /** Members removed from the group (ids are never reused). */
  private readonly removed = new Set<NodeId>();
  /** Per-seed Raft settings: varying them is part of the coverage. */
  private readonly raftSettings: {
    heartbeatTick: number;
    electionTick: number;
    preVote: boolean;
    checkQuorum: boolean;
  };

  constructor(seed: number, options: SimOptions) {
    this.rand = seededRandom(seed);
    const r = this.rand;
    this.size = r() < 0.5 ? 3 : 5;
    this.lastId = this.size;
    this.snapshotEvery = randInt(r, 5, 60);
    this.keepAfterCompaction = randInt(r, 0, 10);
    this.unsafeVoteTwice = options.unsafeVoteTwice ?? false;
    const heartbeatTick = randInt(r, 1, 3);
    this.raftSettings = {
      heartbeatTick,
      electionTick: Math.max(10, heartbeatTick * randInt(r, 5, 10)),
      preVote: r() < 0.75,
      checkQuorum: r() < 0.75,
    };
    this.net = new SimNet(r, {
      dropRate: r() * 0.05,
      dupRate: r() * 0.03,
      longDelayRate: r() * 0.05,
      delayMs: [1, randInt(r, 2, 10)],
      longDelayMs: [20, randInt(r, 50, 400)],
    });
    const voters = Array.from({ length: this.size }, (_, k) => NodeId(k + 1));
    for (const id of voters) this.addMember(id, { voters, learners: [] });
    this.clients = new Clients(this, r, randInt(r, 3, 5), 3_000);
    this.nemesis = new Nemesis(this, r, this.size);
  }

  get now(): number {
    return this.queue.now;
  }

  at(delayMs: number, run: () => void): void {
    this.queue.after(delayMs, run);
  }

  private addMember(id: NodeId, conf: ConfState): void {
    const m = new SimMember(id, MemoryStorage.bootstrap(conf), this, {
      ...this.raftSettings,
      random: this.rand,
      maxSizePerMsg: (randInt(this.rand, 1, 8) * 256) as never,
      maxInflightMsgs: randInt(this.rand, 1, 16),
    });
    this.members.set(id, m);
    // Members tick out of phase, as independent clocks do.
    const tick = () => {
      m.tick();
      this.at(TICK_MS, tick);
    };
    this.at(randInt(this.rand, 1, TICK_MS), tick);
  }

  // --- MemberHost ---

  diskLatency(): number {
    return randInt(this.rand, 1, 5);
  }

  send(from: SimMember, msgs: readonly Message[]): void {
    void from;
    for (const m of msgs) {
      const copies = this.net.copies(m);
      if (copies === 0) this.lost(m);
      for (let i = 0; i < copies; i++) this.at(this.net.delay(), () => this.deliver(m));
    }
  }

  private deliver(m: Message): void {
    const to = this.members.get(m.to);
    if (to === undefined || !to.up || !this.net.connected(m.from, m.to)) {
      this.lost(m);
      return;
    }
    this.net.delivered++;
    if (m.type === 'snap') this.counts.snapshots++;
    if (m.type === 'timeoutNow') this.counts.transfers++;
    to.step(m);
    if (m.type === 'snap') this.reportSnapshot(m, 'finish');
  }

  /** The transport notices a lost snapshot (and nothing else). */
  private lost(m: Message): void {
    if (m.type === 'snap') this.reportSnapshot(m, 'failure');
  }

  private reportSnapshot(m: Message, status: 'finish' | 'failure'): void {
    const from = this.members.get(m.from);
    this.at(randInt(this.rand, 1, 20), () => from?.input((n) => n.reportSnapshot(m.to, status)));
  }

  onPut(m: SimMember, cmd: PutCommand): void {
    this.clients.onPut(m, cmd);
  }

  onRead(m: SimMember, ctx: string): void {
    this.clients.onRead(m, ctx);
  }

  /**
   * A conf change was applied. A new learner is started, knowing the membership that
   * includes it. A removed member is shut down, as a server does once its removal is
   * committed (left running without knowing, it would campaign forever and, without
   * pre-vote or check-quorum, depose every leader the group elects).
   */
  onConf(m: SimMember, e: Entry): void {
    const cc = decodeConfChange(e.data);
    if (e.index > this.lastConfIndex) {
      this.lastConfIndex = e.index;
      this.counts.confChanges++;
    }
    if (cc.type === 'removeNode') {
      this.removed.add(cc.nodeId);
      const gone = this.members.get(cc.nodeId);
      if (gone !== undefined) {
        gone.crash();
        this.members.delete(cc.nodeId);
        this.clients.onCrash(cc.nodeId);
      }
      return;
    }
    if (cc.type !== 'addLearner' || this.members.has(cc.nodeId) || this.removed.has(cc.nodeId))
      return;
    const conf = m.conf()!;
    const learners = conf.learners.includes(cc.nodeId)
      ? conf.learners
      : [...conf.learners, cc.nodeId];
    this.addMember(cc.nodeId, { voters: conf.voters, learners });
  }

  // --- NemesisHost / ClientHost ---

  leader(): SimMember | undefined {
    let best: SimMember | undefined;
    for (const m of this.members.values()) {
      const r = m.node?.raft;
      if (r?.role === 'leader' && (best === undefined || r.term > best.node!.raft.term)) best = m;
    }
    return best;
  }

  voters(): NodeId[] {
    return [...(this.leader()?.conf()?.voters ?? [])];
  }

  chooseMember(): SimMember | undefined {
    const leader = this.leader();
    if (leader !== undefined && this.rand() < 0.6) return leader;
    const up = [...this.members.values()].filter((m) => m.up);
    return up.length === 0 ? undefined : pick(this.rand, up);
  }

  partition(groups: NodeId[][]): void {
    this.net.partition(groups);
  }

  heal(): void {
    this.net.heal();
  }

  crash(m: SimMember): void {
    this.counts.crashes++;
    if (m.crash()) this.counts.lostReadies++;
    this.clients.onCrash(m.id);
  }

  crashNow(m: SimMember): void {
    this.counts.lostReadies++;
    this.crash(m);
    this.at(randInt(this.rand, 200, 3_000), () => this.restart(m));
  }

  restart(m: SimMember): void {
    if (this.members.get(m.id) === m) m.restart(); // a removed member stays down
  }

  nextId(): NodeId {
    return NodeId(++this.lastId);
  }

  // --- running ---

  run(options: SimOptions): void {
    let t = 0;
    while (t < options.durationMs) {
      t = Math.min(t + LOG_CHECK_MS, options.durationMs);
      this.queue.runUntil(t);
      this.checker.checkLogsMatch([...this.members.values()].filter((m) => m.up));
    }
    this.nemesis.stop();
    this.clients.stop();
    this.heal();
    for (const m of this.members.values()) m.restart();
    const settled = options.durationMs + options.settleMs;
    this.queue.runUntil(settled);
    if (options.lateSettle !== false && !this.raftSettings.preVote && !this.caughtUp()) {
      this.counts.lateSettles++;
      for (let extra = LATE_SETTLE_STEP_MS; extra <= LATE_SETTLE_MS; extra += LATE_SETTLE_STEP_MS) {
        this.queue.runUntil(settled + extra);
        if (this.caughtUp()) break;
      }
    }
    this.clients.finish();
    this.checkEnd();
  }

  /** A leader, and every member of its membership has applied all it committed. */
  private caughtUp(): boolean {
    const leader = this.leader();
    const conf = leader?.conf();
    if (leader === undefined || conf === undefined) return false;
    const commit = leader.node!.raft.log.committed;
    return [...conf.voters, ...conf.learners].every(
      (id) => this.members.get(id)?.kv.applied === commit,
    );
  }

  /** After settling: one leader, everyone in the membership caught up and equal. */
  private checkEnd(): void {
    const leader = this.leader();
    if (leader === undefined) throw new SimViolation('liveness: no leader after the settle phase');
    const conf = leader.conf()!;
    const ids = [...conf.voters, ...conf.learners];
    const commit = leader.node!.raft.log.committed;
    const ref = JSON.stringify([...leader.kv.data].sort());
    for (const id of ids) {
      const m = this.members.get(id)!;
      if (m.kv.applied !== commit) {
        throw new SimViolation(
          `liveness: member ${id} applied ${m.kv.applied}, leader committed ${commit}`,
        );
      }
      if (JSON.stringify([...m.kv.data].sort()) !== ref) {
        throw new SimViolation(`state machine safety: member ${id} ends with a different state`);
      }
    }
    this.checker.checkLogsMatch(ids.map((id) => this.members.get(id)!));
    this.checkAckedWrites(leader);
    const lin = checkLinearizable(this.clients.history);
    if (!lin.ok) throw new SimViolation(`linearizability (key ${lin.key}): ${lin.explanation}`);
  }

  /** Every acknowledged put was applied: its (client, seq) is covered by the final state. */
  private checkAckedWrites(leader: SimMember): void {
    for (const cmd of this.clients.acked) {
      if ((leader.kv.lastSeq.get(cmd.c) ?? 0) < cmd.s) {
        throw new SimViolation(
          `acknowledged write lost: client ${cmd.c} seq ${cmd.s} (${cmd.k}=${cmd.v})`,
        );
      }
    }
  }

  stats(): SimStats {
    return {
      ...this.counts,
      members: this.size,
      messages: this.net.sent,
      ops: this.clients.history.length,
      acked: this.clients.acked.length,
      leaders: this.checker.leaderCount,
    };
  }
}

export function runSeed(seed: number, options: SimOptions): SimResult {
  let world: World | undefined;
  try {
    world = new World(seed, options);
    world.run(options);
    return { seed, ok: true, stats: world.stats() };
  } catch (e) {
    const error =
      e instanceof SimViolation ? e.message : `crash: ${(e as Error).stack ?? String(e)}`;
    const stats = world?.stats() ?? emptyStats();
    return { seed, ok: false, error, stats };
  }
}

export function emptyStats(): SimStats {
  return {
    members: 0,
    messages: 0,
    ops: 0,
    acked: 0,
    leaders: 0,
    crashes: 0,
    lostReadies: 0,
    snapshots: 0,
    confChanges: 0,
    transfers: 0,
    lateSettles: 0,
  };
}
