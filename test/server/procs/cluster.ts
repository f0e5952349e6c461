/**
 * Members as child processes (`node <compiled>/cli.js serve ...`) on loopback ports, for the
 * tests that need real process death (SIGKILL). Each child's stdout (pino JSON lines) and
 * stderr are kept for assertions and printed when a test fails.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePorts, waitFor } from '../helpers.js';
import { type Status, status } from './http.js';

export interface ProcMember {
  name: string;
  client: string;
  peer: string;
  dataDir: string;
  child: ChildProcess | undefined;
  exited: Promise<void>;
  exitCode?: number | null;
  lines: string[];
}

export class ProcCluster {
  readonly members = new Map<string, ProcMember>();

  private constructor(
    private readonly cli: string,
    private readonly flags: string[],
  ) {}

  /** Starts a new cluster of `names`; resolves when every member answers. */
  static async start(
    cli: string,
    root: string,
    names: string[],
    flags: string[] = [],
  ): Promise<ProcCluster> {
    const c = await ProcCluster.launch(cli, root, names, flags);
    // A member answers clients only once its publish is applied, which needs a quorum of
    // the others started too: on a loaded machine that can take a while. On failure, stop
    // what was spawned so no child outlives the test.
    try {
      await Promise.all(names.map((n) => c.waitUp(n, 90_000)));
    } catch (e) {
      await c.close();
      throw e;
    }
    return c;
  }

  /** Spawns a new cluster of `names` and returns at once (the members are still starting). */
  static async launch(
    cli: string,
    root: string,
    names: string[],
    flags: string[] = [],
  ): Promise<ProcCluster> {
    const c = new ProcCluster(cli, flags);
    const ports = await freePorts(2 * names.length);
    names.forEach((name, i) => {
      c.members.set(name, {
        name,
        client: `http://127.0.0.1:${ports[2 * i]}`,
        peer: `http://127.0.0.1:${ports[2 * i + 1]}`,
        dataDir: join(root, name),
        child: undefined,
        exited: Promise.resolve(),
        lines: [],
      });
    });
    const initial = [...c.members.values()].map((m) => `${m.name}=${m.peer}`).join(',');
    for (const name of names) {
      c.spawn(name, [
        '--initial-cluster',
        initial,
        '--initial-advertise-peer-urls',
        c.get(name).peer,
        '--initial-cluster-token',
        'proc-test',
      ]);
    }
    return c;
  }

  /** Defines one more member on fresh ports (not started; see `spawn`). */
  async define(name: string, root: string): Promise<ProcMember> {
    const [client, peer] = await freePorts(2);
    const m: ProcMember = {
      name,
      client: `http://127.0.0.1:${client}`,
      peer: `http://127.0.0.1:${peer}`,
      dataDir: join(root, name),
      child: undefined,
      exited: Promise.resolve(),
      lines: [],
    };
    this.members.set(name, m);
    return m;
  }

  get(name: string): ProcMember {
    const m = this.members.get(name);
    if (m === undefined) throw new Error(`no member ${name}`);
    return m;
  }

  /** Starts (or restarts) a member process; `extra` adds flags (none needed on restart). */
  spawn(name: string, extra: string[] = []): void {
    const m = this.get(name);
    const args = [
      this.cli,
      'serve',
      '--name',
      name,
      '--data-dir',
      m.dataDir,
      '--listen-client-urls',
      m.client,
      '--listen-peer-urls',
      m.peer,
      '--heartbeat-interval',
      '50',
      '--election-timeout',
      '500',
      ...this.flags,
      ...extra,
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    m.child = child;
    const keep = (prefix: string) => (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line !== '') m.lines.push(prefix + line);
    };
    child.stdout?.on('data', keep(''));
    child.stderr?.on('data', keep('stderr: '));
    m.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        m.exitCode = code;
        m.child = undefined;
        resolve();
      }),
    );
  }

  async waitUp(name: string, timeoutMs = 60_000): Promise<void> {
    await waitFor(
      `${name} to answer`,
      async () => (await status(this.get(name).client)) !== undefined,
      timeoutMs,
      50,
    );
  }

  /** SIGKILL: no shutdown code runs. */
  async kill9(name: string): Promise<void> {
    const m = this.get(name);
    m.child?.kill('SIGKILL');
    await m.exited;
    m.child = undefined;
  }

  async terminate(name: string): Promise<void> {
    const m = this.get(name);
    m.child?.kill('SIGTERM');
    await m.exited;
    m.child = undefined;
  }

  running(): ProcMember[] {
    return [...this.members.values()].filter((m) => m.child !== undefined);
  }

  /** The leader every running member agrees on, as member name. */
  async agreedLeader(): Promise<string | undefined> {
    const all = await Promise.all(this.running().map((m) => status(m.client)));
    if (all.some((s) => s === undefined)) return undefined;
    const ss = all as Status[];
    const leader = ss[0]?.leader;
    if (leader === undefined || leader === '0' || ss.some((s) => s.leader !== leader))
      return undefined;
    const i = ss.findIndex((s) => s.memberId === leader);
    return i < 0 ? undefined : this.running()[i]?.name;
  }

  async waitLeader(timeoutMs = 10_000): Promise<string> {
    let leader: string | undefined;
    await waitFor(
      'an agreed leader',
      async () => (leader = await this.agreedLeader()) !== undefined,
      timeoutMs,
      25,
    );
    return leader!;
  }

  /** Every kept log line, prefixed with its member's name (printed on failure). */
  logs(): string {
    return [...this.members.values()]
      .flatMap((m) => m.lines.map((l) => `${m.name} | ${l}`))
      .join('\n');
  }

  async close(): Promise<void> {
    await Promise.all(this.running().map((m) => this.terminate(m.name)));
  }
}
