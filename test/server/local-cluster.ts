/**
 * Several members in this process, each with its own data dir and real loopback listeners
 * (peer websockets, client HTTP): fast enough to test replication, snapshots and membership
 * without child processes. Timers are short (heartbeat 20 ms, election 200 ms).
 */
import { join } from 'node:path';
import {
  type MemberConfig,
  type MemberConfigInput,
  resolveConfig,
} from '../../src/server/config.js';
import { Member } from '../../src/server/member.js';
import { capturingLogger, freePorts, waitFor } from './helpers.js';

export interface Node {
  name: string;
  config: MemberConfig;
  member: Member | undefined;
  lines: Array<Record<string, unknown>>;
}

export class LocalCluster {
  readonly nodes = new Map<string, Node>();

  constructor(
    private readonly root: string,
    private readonly extra: MemberConfigInput = {},
  ) {}

  /** Starts a new cluster of `names`, all at once. */
  static async start(
    root: string,
    names: string[],
    extra: MemberConfigInput = {},
  ): Promise<LocalCluster> {
    // A port found free can be taken by another process before a member binds it: then
    // stop what started and try again with fresh ports and fresh data directories.
    for (let attempt = 1; ; attempt++) {
      const c = new LocalCluster(attempt === 1 ? root : join(root, `retry-${attempt}`), extra);
      const ports = await freePorts(2 * names.length);
      const peer = (i: number) => `http://127.0.0.1:${ports[2 * i + 1]}`;
      const initialCluster = names.map((n, i) => `${n}=${peer(i)}`).join(',');
      names.forEach((name, i) => {
        c.define(name, { client: ports[2 * i]!, peer: ports[2 * i + 1]! }, { initialCluster });
      });
      const started = await Promise.allSettled(names.map((n) => c.startNode(n)));
      const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed === undefined) return c;
      await c.close();
      const inUse = (failed.reason as { code?: string })?.code === 'EADDRINUSE';
      if (!inUse || attempt >= 3) throw failed.reason;
    }
  }

  /** Defines a member's config (ports and flags) without starting it. */
  define(name: string, ports: { client: number; peer: number }, flags: MemberConfigInput): Node {
    const peer = `http://127.0.0.1:${ports.peer}`;
    const config = resolveConfig({
      name,
      dataDir: join(this.root, name),
      listenClientUrls: `http://127.0.0.1:${ports.client}`,
      listenPeerUrls: peer,
      initialAdvertisePeerUrls: peer,
      heartbeatMs: 20,
      electionMs: 200,
      initialClusterToken: 'local-test',
      ...this.extra,
      ...flags,
    });
    const node: Node = { name, config, member: undefined, lines: [] };
    this.nodes.set(name, node);
    return node;
  }

  node(name: string): Node {
    const n = this.nodes.get(name);
    if (n === undefined) throw new Error(`no member ${name}`);
    return n;
  }

  member(name: string): Member {
    const m = this.node(name).member;
    if (m === undefined) throw new Error(`${name} is not running`);
    return m;
  }

  async startNode(name: string): Promise<Member> {
    const node = this.node(name);
    const { logger, lines } = capturingLogger(name);
    node.lines = lines;
    node.member = await Member.start(node.config, { logger, leaseCheckMs: 50 });
    return node.member;
  }

  async stopNode(name: string): Promise<void> {
    const node = this.node(name);
    const m = node.member;
    node.member = undefined;
    await m?.stop();
  }

  running(): Member[] {
    return [...this.nodes.values()].flatMap((n) => (n.member === undefined ? [] : [n.member]));
  }

  async waitLeader(timeoutMs = 5000): Promise<Member> {
    let leader: Member | undefined;
    await waitFor(
      'an agreed leader',
      () => {
        const ms = this.running().filter((m) => !m.isLearner);
        leader = ms.find((m) => m.driver.status().role === 'leader');
        return leader !== undefined && ms.every((m) => m.driver.status().leader === leader!.id);
      },
      timeoutMs,
    );
    return leader!;
  }

  /** Waits until every running member has applied the same index and revision. */
  async waitConverged(timeoutMs = 5000): Promise<void> {
    await waitFor(
      'members to converge',
      () => {
        const ms = this.running();
        const a = ms.map((m) => `${m.store.appliedIndex}/${m.store.currentRevision}`);
        return (
          a.every((x) => x === a[0]) &&
          ms.every((m) => m.driver.status().commit === m.driver.status().applied)
        );
      },
      timeoutMs,
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.nodes.keys()].map((n) => this.stopNode(n)));
  }
}
