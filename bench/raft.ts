/**
 * Raft commit benchmark:
 *   `npm run bench:raft [-- --seconds 3 --concurrency 1,64,256 --size 100 --scenarios single,local,loopback]`
 *
 * For each scenario and concurrency, N closed-loop clients propose `size`-byte commands to
 * the leader for `seconds` (after a short warm-up) and record the time from propose() to
 * "committed and applied on the leader". Prints commits/s and latency p50/p99/max (hdr
 * histogram), and writes a JSON result with metadata to bench/results/.
 *
 * Scenarios (every member on its own LevelDB with fsynced group commits):
 *   1 member           one RaftDriver, no network
 *   3 members local    three drivers in this process, messages passed in memory
 *   3 members loopback three drivers, messages over RaftTransport websockets on 127.0.0.1
 *
 * `--mark` chooses how each member keeps its durable high-water mark (see
 * src/raft/storage/durable-mark.ts): `async` as a member does (written after the data,
 * coalesced, never awaited by a Ready), `sync` waits for an fsynced mark write after every
 * synced Ready (what acknowledging only after both would cost), `none` keeps no mark.
 * `--mark-spacing <ms>` sets the least time between two async mark writes (the member's
 * default, MARK_SPACING_MS, unless given; 0 writes after every synced Ready as soon as the
 * previous mark write is done).
 */
import { execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as hdr from 'hdr-histogram-js';
import { Level } from 'level';
import { RaftDriver } from '../src/raft/driver/driver.js';
import { RaftTransport } from '../src/raft/driver/transport.js';
import type { AppliedEntry, DriverTransport } from '../src/raft/driver/types.js';
import { DurableMark, MARK_SPACING_MS } from '../src/raft/storage/durable-mark.js';
import { LevelRaftStorage } from '../src/raft/storage/level-storage.js';
import { type ConfState, type Message, NodeId } from '../src/raft/types.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '0.5' },
    concurrency: { type: 'string', default: '1,64,256' },
    size: { type: 'string', default: '100' },
    scenarios: { type: 'string', default: 'single,local,loopback' },
    'snapshot-entries': { type: 'string', default: '10000' },
    /** LevelDB memtable size in MiB (0 = LevelDB's default, 4 MiB). */
    'write-buffer-mb': { type: 'string', default: '0' },
    mark: { type: 'string', default: 'async' },
    'mark-spacing': { type: 'string', default: String(MARK_SPACING_MS) },
  },
});
const SECONDS = Number(args.seconds);
const WARMUP = Number(args.warmup);
const CONCURRENCY = args.concurrency.split(',').map(Number);
const PAYLOAD = Buffer.alloc(Number(args.size), 'x');
const SNAPSHOT_ENTRIES = Number(args['snapshot-entries']);
const WRITE_BUFFER_MB = Number(args['write-buffer-mb']);
const MARK = args.mark;
const MARK_SPACING = Number(args['mark-spacing']);
if (MARK !== 'async' && MARK !== 'sync' && MARK !== 'none') {
  throw new Error(`--mark must be async, sync or none (got ${MARK})`);
}

type Scenario = 'single' | 'local' | 'loopback';

interface BenchMember {
  driver: RaftDriver;
  close(): Promise<void>;
}

/** In-process network: delivers each turn's messages on the next turn. */
class LocalNetwork {
  readonly drivers = new Map<NodeId, RaftDriver>();
  private queue: Message[] = [];
  transport(): DriverTransport {
    return {
      send: (ms) => {
        if (this.queue.length === 0) setImmediate(() => this.deliver());
        this.queue.push(...ms);
      },
    };
  }
  private deliver(): void {
    const q = this.queue;
    this.queue = [];
    for (const m of q) this.drivers.get(m.to)?.receive(m);
  }
}

const countingApp = {
  applied: 0,
  apply(entries: readonly AppliedEntry[]) {
    this.applied += entries.length;
  },
  snapshot: () => new Uint8Array(16),
  restore: () => {},
};

/** Durations of synced Ready writes (all members), to tell disk stalls from our own. */
let fsyncHist = newHist();

function newHist() {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000 });
}

async function openStorage(dir: string, conf: ConfState) {
  const db = new Level(dir, WRITE_BUFFER_MB > 0 ? { writeBufferSize: WRITE_BUFFER_MB << 20 } : {});
  await db.open();
  const mark =
    MARK === 'none'
      ? undefined
      : await DurableMark.create(`${dir}.mark`, { spacingMs: MARK_SPACING });
  const storage = await LevelRaftStorage.open(db, { bootstrap: conf, mark });
  const persist = storage.persist.bind(storage);
  storage.persist = async (rd) => {
    const t0 = performance.now();
    await persist(rd);
    if (MARK === 'sync' && rd.mustSync && mark !== undefined) {
      const index = storage.lastIndex();
      mark.advance({ index, term: storage.term(index), hardTerm: mark.value.hardTerm + 1 });
      await mark.flush();
    }
    if (rd.mustSync)
      fsyncHist.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
  };
  return { db, storage };
}

async function startCluster(scenario: Scenario, root: string): Promise<BenchMember[]> {
  const n = scenario === 'single' ? 1 : 3;
  const ids = Array.from({ length: n }, (_, i) => NodeId(i + 1));
  const conf: ConfState = { voters: ids, learners: [] };
  const net = new LocalNetwork();
  const transports = new Map<NodeId, RaftTransport>();
  if (scenario === 'loopback') {
    for (const id of ids) {
      const t = new RaftTransport({
        id,
        onMessage: (m) => net.drivers.get(id)?.receive(m),
        onUnreachable: (p) => net.drivers.get(id)?.reportUnreachable(p),
        onSnapshotStatus: (p, s) => net.drivers.get(id)?.reportSnapshot(p, s),
      });
      transports.set(id, t);
    }
    const ports = new Map<NodeId, number>();
    for (const [id, t] of transports) ports.set(id, (await t.listen()).port);
    for (const [id, t] of transports) {
      for (const [peer, port] of ports)
        if (peer !== id) t.setPeer(peer, `http://127.0.0.1:${port}`);
    }
  }
  const members: BenchMember[] = [];
  for (const id of ids) {
    const { db, storage } = await openStorage(join(root, `m${id}`), conf);
    const transport = transports.get(id) ?? net.transport();
    const driver = new RaftDriver({
      id,
      storage,
      transport,
      app: { ...countingApp },
      snapshotEntries: SNAPSHOT_ENTRIES,
    });
    net.drivers.set(id, driver);
    await driver.start();
    members.push({
      driver,
      close: async () => {
        await driver.stop();
        await transports.get(id)?.close();
        await db.close();
      },
    });
  }
  members[0]!.driver.campaign();
  const deadline = Date.now() + 10_000;
  while (members[0]!.driver.status().role !== 'leader') {
    if (Date.now() > deadline) throw new Error('no leader');
    await new Promise((r) => setTimeout(r, 10));
  }
  return members;
}

interface Row {
  scenario: Scenario;
  concurrency: number;
  commits: number;
  commitsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  /** Synced Ready writes during the run, all members: how much of the tail is the disk. */
  fsyncP50Ms: number;
  fsyncP99Ms: number;
  /** Process CPU (user + system) per commit, all members together: robust to a busy host. */
  cpuUsPerCommit: number;
}

async function drive(leader: RaftDriver, concurrency: number, seconds: number) {
  const hist = newHist();
  let commits = 0;
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const client = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        await leader.propose(PAYLOAD);
        hist.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
        commits++;
      } catch {
        errors++;
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, client));
  const elapsed = (performance.now() - started) / 1000;
  return { hist, commits, errors, elapsed };
}

async function runCell(scenario: Scenario, concurrency: number): Promise<Row> {
  const root = mkdtempSync(join(tmpdir(), 'etcetera-bench-raft-'));
  const members = await startCluster(scenario, root);
  try {
    const leader = members[0]!.driver;
    if (WARMUP > 0) await drive(leader, concurrency, WARMUP);
    fsyncHist = newHist();
    const cpu0 = process.cpuUsage();
    const { hist, commits, errors, elapsed } = await drive(leader, concurrency, SECONDS);
    const cpu = process.cpuUsage(cpu0);
    return {
      scenario,
      concurrency,
      commits,
      commitsPerSec: Math.round(commits / elapsed),
      p50Ms: hist.getValueAtPercentile(50) / 1000,
      p99Ms: hist.getValueAtPercentile(99) / 1000,
      maxMs: hist.maxValue / 1000,
      errors,
      fsyncP50Ms: fsyncHist.getValueAtPercentile(50) / 1000,
      fsyncP99Ms: fsyncHist.getValueAtPercentile(99) / 1000,
      cpuUsPerCommit: Math.round((cpu.user + cpu.system) / Math.max(1, commits)),
    };
  } finally {
    for (const m of members) await m.close();
    rmSync(root, { recursive: true, force: true });
  }
}

function commit(): string {
  try {
    return execSync('git rev-parse --short HEAD', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  const scenarios = args.scenarios.split(',') as Scenario[];
  console.log(
    'scenario   in-flight  commits/s   p50 ms   p99 ms   max ms  errors  cpu us/commit  fsync p50/p99 ms',
  );
  for (const scenario of scenarios) {
    for (const c of CONCURRENCY) {
      const r = await runCell(scenario, c);
      rows.push(r);
      console.log(
        `${r.scenario.padEnd(10)} ${String(c).padStart(9)} ${String(r.commitsPerSec).padStart(10)} ` +
          `${r.p50Ms.toFixed(2).padStart(8)} ${r.p99Ms.toFixed(2).padStart(8)} ` +
          `${r.maxMs.toFixed(2).padStart(8)} ${String(r.errors).padStart(7)} ` +
          `${String(r.cpuUsPerCommit).padStart(14)}  ` +
          `${r.fsyncP50Ms.toFixed(2)}/${r.fsyncP99Ms.toFixed(2)}`,
      );
    }
  }
  const meta = {
    bench: 'raft',
    commit: commit(),
    node: process.version,
    date: new Date().toISOString(),
    options: {
      seconds: SECONDS,
      warmup: WARMUP,
      size: PAYLOAD.length,
      concurrency: CONCURRENCY,
      snapshotEntries: SNAPSHOT_ENTRIES,
      writeBufferMb: WRITE_BUFFER_MB,
      mark: MARK,
      markSpacingMs: MARK_SPACING,
    },
    loadavg: loadavg(),
  };
  mkdirSync('bench/results', { recursive: true });
  const file = join('bench/results', `raft-${meta.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ meta, rows }, null, 2));
  console.log(`wrote ${file}`);
}

await main();
