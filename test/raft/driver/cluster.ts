/**
 * A test cluster: N members in this process, each with its own LevelDB in a test
 * directory, LevelRaftStorage, a RaftTransport on a real loopback port and a RaftDriver
 * applying to a tiny in-memory application (the list of applied commands).
 */
import { Level } from 'level';
import { RaftDriver } from '../../../src/raft/driver/driver.js';
import { RaftTransport } from '../../../src/raft/driver/transport.js';
import type {
  AppliedEntry,
  ApplyOutcomes,
  RaftDriverOptions,
} from '../../../src/raft/driver/types.js';
import { LevelRaftStorage } from '../../../src/raft/storage/level-storage.js';
import { type ConfState, NodeId, type Snapshot } from '../../../src/raft/types.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** The replicated state machine: the ordered list of applied commands. */
export class ListApp {
  commands: string[] = [];
  restores = 0;
  /** Answers each command with `<command>#<its position>`, other entries with nothing. */
  apply(entries: readonly AppliedEntry[]): ApplyOutcomes | Promise<ApplyOutcomes> {
    return entries.map((e) => {
      if (e.type !== 'normal' || e.data.length === 0) return undefined;
      const c = dec(e.data);
      this.commands.push(c);
      return `${c}#${this.commands.length}`;
    });
  }
  snapshot(): Uint8Array {
    return enc(JSON.stringify(this.commands));
  }
  restore(s: Snapshot): void {
    this.restores++;
    this.commands = s.data.length === 0 ? [] : (JSON.parse(dec(s.data)) as string[]);
  }
}

export interface Member {
  id: NodeId;
  dir: string;
  port: number;
  db: Level<string, string>;
  storage: LevelRaftStorage;
  transport: RaftTransport;
  driver: RaftDriver;
  app: ListApp;
  running: boolean;
}

export type DriverTuning = Partial<
  Pick<RaftDriverOptions, 'snapshotEntries' | 'snapshotCatchUpEntries' | 'requestTimeoutMs'>
>;

export class Cluster {
  readonly members = new Map<NodeId, Member>();
  private readonly conf: ConfState;

  private constructor(
    private readonly dirs: string[],
    private readonly tuning: DriverTuning,
    initial: number,
  ) {
    this.conf = { voters: dirs.slice(0, initial).map((_, i) => NodeId(i + 1)), learners: [] };
  }

  /**
   * Starts the first `initial` of `dirs.length` members (default all) on free loopback
   * ports; the rest can join later with `startMember`.
   */
  static async start(
    dirs: string[],
    tuning: DriverTuning = {},
    initial = dirs.length,
  ): Promise<Cluster> {
    const c = new Cluster(dirs, tuning, initial);
    const ports: number[] = [];
    for (let i = 0; i < initial; i++) ports.push(await freePort());
    for (let i = 0; i < initial; i++) await c.startMember(NodeId(i + 1), ports[i]!);
    return c;
  }

  get(id: number): Member {
    return this.members.get(NodeId(id))!;
  }

  running(): Member[] {
    return [...this.members.values()].filter((m) => m.running);
  }

  leader(): Member | undefined {
    return this.running().find((m) => m.driver.status().role === 'leader');
  }

  /**
   * Starts (or restarts) member `id`. A member joining a running group bootstraps with the
   * membership that already includes it (`conf`), as etcd's `--initial-cluster-state
   * existing` does; the log it then receives replays that change as a no-op.
   */
  async startMember(id: NodeId, port: number, conf = this.conf): Promise<Member> {
    const dir = this.dirs[id - 1]!;
    const db = new Level(dir);
    await db.open();
    const storage = await LevelRaftStorage.open(db, { bootstrap: conf });
    const app = new ListApp();
    let driver: RaftDriver | undefined;
    const peers = new Map<NodeId, string>();
    for (const m of this.members.values()) if (m.id !== id) peers.set(m.id, url(m.port));
    const transport = new RaftTransport({
      id,
      peers,
      onMessage: (msg) => driver?.receive(msg),
      onUnreachable: (p) => driver?.reportUnreachable(p),
      onSnapshotStatus: (p, s) => driver?.reportSnapshot(p, s),
      limits: { backoffMinMs: 20, backoffMaxMs: 200 },
    });
    await transport.listen(port);
    for (const m of this.members.values()) if (m.id !== id) m.transport.setPeer(id, url(port));
    driver = new RaftDriver({
      id,
      storage,
      transport,
      app,
      heartbeatMs: 20,
      electionMs: 200,
      requestTimeoutMs: 3000,
      ...this.tuning,
    });
    await driver.start();
    const member: Member = { id, dir, port, db, storage, transport, driver, app, running: true };
    this.members.set(id, member);
    return member;
  }

  async stopMember(id: number): Promise<void> {
    const m = this.get(id);
    if (!m.running) return;
    m.running = false;
    await m.driver.stop();
    await m.transport.close();
    await m.storage.flush().catch(() => {});
    await m.db.close();
  }

  async restartMember(id: number): Promise<Member> {
    const m = this.get(id);
    return this.startMember(m.id, m.port);
  }

  /** Cuts every link between member `id` and the others (both directions). */
  isolate(id: number): void {
    const m = this.get(id);
    for (const o of this.running()) {
      if (o.id === m.id) continue;
      o.transport.removePeer(m.id);
      m.transport.removePeer(o.id);
    }
  }

  /** Restores the links cut by `isolate`. */
  heal(id: number): void {
    const m = this.get(id);
    for (const o of this.running()) {
      if (o.id === m.id) continue;
      o.transport.setPeer(m.id, url(m.port));
      m.transport.setPeer(o.id, url(o.port));
    }
  }

  async close(): Promise<void> {
    for (const m of this.members.values()) await this.stopMember(m.id);
  }

  /** Waits for a leader that every running member agrees on. */
  async waitLeader(timeoutMs = 5000): Promise<Member> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const l = this.leader();
      if (l !== undefined && this.running().every((m) => m.driver.status().leader === l.id)) {
        return l;
      }
      if (Date.now() > deadline) throw new Error('no agreed leader in time');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Waits until every running member has applied the same `n` commands. */
  async waitApplied(n: number, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.running().some((m) => m.app.commands.length < n)) {
      if (Date.now() > deadline) {
        const got = this.running().map((m) => `${m.id}:${m.app.commands.length}`);
        throw new Error(`not all members applied ${n} commands in time (${got.join(' ')})`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

export const url = (port: number) => `http://127.0.0.1:${port}`;
export { freePort };
export const cmd = (s: string) => enc(s);

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}
