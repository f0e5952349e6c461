/**
 * Put benchmark: `npm run bench:api [-- --seconds 4 --value 256 --clients 1,64 --members 1,3
 * --protocol grpc|json]`
 *
 * Puts per second and p50/p99 latency through the typed client in src/client, over etcd's
 * gRPC API (KV/Put; the default) or its JSON API (POST /v3/kv/put) with --protocol json, the
 * same client and protocol for both systems, for clusters of 1 and 3 members at 1 and 64 concurrent
 * clients. etcetera's members run as child processes (`etcetera serve`, built into .build),
 * with the same flags as etcd; when `etcd` is on PATH the same load runs against real etcd
 * clusters, and the two are printed side by side with ratios. Every client writes to the
 * first member's endpoint (a follower forwards to the leader in both). Each scenario is
 * bounded in time (--seconds after a 0.5 s warm-up) and in count (--max-ops). Server CPU per
 * put is the CPU time (user + system, from /proc) of all the cluster's member processes over
 * the measured window, divided by the puts acknowledged in it.
 * `--cli <path>` runs another build's `cli.js` as etcetera (to compare two builds, each
 * against etcd in its own run). `--node-args="--cpu-prof --cpu-prof-dir=prof"` passes Node
 * flags to etcetera's members (a member writes its profile when it stops). Writes a JSON result with metadata to bench/results/.
 */
import { type ChildProcess, execSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as hdr from 'hdr-histogram-js';
import { Client, type Protocol } from '../src/client/index.js';
import { processCpuSeconds } from './lib/proc-stats.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    value: { type: 'string', default: '256' },
    clients: { type: 'string', default: '1,64' },
    members: { type: 'string', default: '1,3' },
    'max-ops': { type: 'string', default: '200000' },
    'no-etcd': { type: 'boolean', default: false },
    protocol: { type: 'string', default: 'grpc' },
    cli: { type: 'string' },
    'node-args': { type: 'string', default: '' },
  },
});
const PROTOCOL: Protocol = (() => {
  const p = args.protocol;
  if (p !== 'grpc' && p !== 'json') throw new Error('--protocol is grpc or json');
  return p;
})();
const SECONDS = Number(args.seconds);
const VALUE = Buffer.alloc(Number(args.value), 'v');
const CLIENTS = args.clients.split(',').map(Number);
const MEMBERS = args.members.split(',').map(Number);
const MAX_OPS = Number(args['max-ops']);
const WARMUP_MS = 500;
const KEYS_PER_CLIENT = 1000;
const NODE_ARGS = args['node-args'].split(' ').filter((a) => a !== '');

type Impl = 'etcetera' | 'etcd';

interface Row {
  impl: Impl;
  members: number;
  clients: number;
  ops: number;
  seconds: number;
  putsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** Members' CPU (user + system) per acknowledged put, in µs; null without /proc. */
  cpuUsPerPut: number | null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

interface Cluster {
  endpoints: string[];
  /** CPU seconds used so far by all member processes, or null where /proc is missing. */
  cpuSeconds(): number | null;
  stop(): Promise<void>;
}

/** Starts `size` members of `impl` on loopback, each a child process with etcd's flags. */
async function startCluster(impl: Impl, size: number): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), `etcetera-bench-${impl}-`));
  const members = [];
  for (let i = 0; i < size; i++) {
    members.push({ name: `m${i}`, client: await freePort(), peer: await freePort() });
  }
  const cluster = members.map((m) => `${m.name}=http://127.0.0.1:${m.peer}`).join(',');
  const cli = args.cli ?? fileURLToPath(new URL('../src/cli.js', import.meta.url));
  const children: ChildProcess[] = members.map((m) => {
    const flags = [
      `--name=${m.name}`,
      `--data-dir=${join(dir, m.name)}`,
      `--listen-client-urls=http://127.0.0.1:${m.client}`,
      `--advertise-client-urls=http://127.0.0.1:${m.client}`,
      `--listen-peer-urls=http://127.0.0.1:${m.peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${m.peer}`,
      `--initial-cluster=${cluster}`,
      '--log-level=error',
    ];
    return impl === 'etcd'
      ? spawn('etcd', flags, { stdio: 'ignore' })
      : spawn(process.execPath, [...NODE_ARGS, cli, 'serve', ...flags], {
          stdio: ['ignore', 'ignore', 'inherit'],
        });
  });
  const endpoints = members.map((m) => `http://127.0.0.1:${m.client}`);
  const stop = async () => {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(endpoints.map((e) => waitHealthy(e, 90_000)));
  } catch (e) {
    await stop();
    throw e;
  }
  const cpuSeconds = () => {
    let sum = 0;
    for (const c of children) {
      const s = c.pid === undefined ? null : processCpuSeconds(c.pid);
      if (s === null) return null;
      sum += s;
    }
    return sum;
  };
  return { endpoints, stop, cpuSeconds };
}

async function waitHealthy(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${url} did not become healthy`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `clients` loops, each putting its own keys one request at a time, for the time bound. */
async function load(
  endpoint: string,
  clients: number,
  cpuSeconds: () => number | null,
): Promise<Omit<Row, 'impl' | 'members'>> {
  const client = new Client({
    endpoints: [endpoint],
    maxSockets: clients,
    timeoutMs: 10_000,
    transport: PROTOCOL,
  });
  const histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 60_000_000,
    numberOfSignificantValueDigits: 3,
  });
  let ops = 0;
  let errors = 0;
  let measuring = false;
  const started = performance.now();
  let measuredFrom = started;
  let cpuFrom: number | null = null;
  const end = started + WARMUP_MS + SECONDS * 1000;
  const loop = async (c: number) => {
    for (let i = 0; performance.now() < end && ops < MAX_OPS; i++) {
      const t0 = performance.now();
      try {
        await client.put(`bench/${c}/${i % KEYS_PER_CLIENT}`, VALUE);
      } catch {
        errors++;
        continue;
      }
      const now = performance.now();
      if (!measuring && now - started >= WARMUP_MS) {
        measuring = true;
        measuredFrom = now;
        cpuFrom = cpuSeconds();
      }
      if (measuring) {
        ops++;
        histogram.recordValue(Math.max(1, Math.round((now - t0) * 1000)));
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, c) => loop(c)));
  const seconds = (performance.now() - measuredFrom) / 1000;
  const cpuTo = cpuSeconds();
  client.close();
  const row = {
    clients,
    ops,
    seconds,
    putsPerSecond: ops / seconds,
    p50Ms: histogram.getValueAtPercentile(50) / 1000,
    p99Ms: histogram.getValueAtPercentile(99) / 1000,
    errors,
    cpuUsPerPut:
      cpuFrom === null || cpuTo === null || ops === 0 ? null : ((cpuTo - cpuFrom) * 1e6) / ops,
  };
  histogram.destroy();
  return row;
}

function etcdMissing(): string | undefined {
  if (args['no-etcd']) return 'skipped (--no-etcd)';
  const r = spawnSync('etcd', ['--version'], { encoding: 'utf8' });
  return r.error ? 'not on PATH' : undefined;
}

async function main(): Promise<void> {
  const missing = etcdMissing();
  const impls: Impl[] = missing ? ['etcetera'] : ['etcetera', 'etcd'];
  const rows: Row[] = [];
  for (const members of MEMBERS) {
    for (const impl of impls) {
      const cluster = await startCluster(impl, members);
      try {
        for (const clients of CLIENTS) {
          const r = await load(cluster.endpoints[0] as string, clients, cluster.cpuSeconds);
          rows.push({ impl, members, ...r });
          process.stderr.write(
            `${impl} ${members}m ${clients}c: ${r.putsPerSecond.toFixed(0)} puts/s p50 ${r.p50Ms.toFixed(2)} ms p99 ${r.p99Ms.toFixed(2)} ms cpu ${r.cpuUsPerPut?.toFixed(0) ?? '-'} µs/put\n`,
          );
        }
      } finally {
        await cluster.stop();
      }
    }
  }
  report(rows, missing);
}

function report(rows: Row[], etcdMissingReason: string | undefined): void {
  let commit = process.env.ETCETERA_BENCH_COMMIT ?? 'unknown';
  try {
    commit = execSync('git rev-parse --short HEAD', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {}
  const meta = {
    date: new Date().toISOString(),
    commit,
    node: process.version,
    cpus: cpus().length,
    /** The machine may be shared: its 1-minute load average when the run ended. */
    loadAverage: loadavg()[0],
    seconds: SECONDS,
    valueBytes: VALUE.length,
    protocol: PROTOCOL,
    etcd:
      etcdMissingReason ??
      spawnSync('etcd', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0],
  };
  const find = (impl: Impl, m: number, c: number) =>
    rows.find((r) => r.impl === impl && r.members === m && r.clients === c);
  const lines = [
    `etcd ${PROTOCOL === 'grpc' ? 'gRPC' : 'JSON'} API put benchmark (${VALUE.length}-byte values, ${SECONDS} s per scenario), node ${process.version}, ${meta.cpus} cpus (load ${meta.loadAverage?.toFixed(1)}), commit ${commit}`,
    `etcd: ${meta.etcd}`,
    '',
    'members clients | etcetera puts/s  p50 ms  p99 ms  cpu µs/put | etcd puts/s  p50 ms  p99 ms  cpu µs/put | puts/s ratio  p99 ratio  cpu ratio',
  ];
  const f = (n: number | undefined, d = 0) => (n === undefined ? '-' : n.toFixed(d));
  for (const m of MEMBERS) {
    for (const c of CLIENTS) {
      const a = find('etcetera', m, c);
      const e = find('etcd', m, c);
      const ratio = a && e ? (a.putsPerSecond / e.putsPerSecond).toFixed(2) : '-';
      const p99 = a && e ? (a.p99Ms / e.p99Ms).toFixed(2) : '-';
      const cpu =
        a?.cpuUsPerPut && e?.cpuUsPerPut ? (a.cpuUsPerPut / e.cpuUsPerPut).toFixed(2) : '-';
      lines.push(
        `${String(m).padStart(7)} ${String(c).padStart(7)} | ${f(a?.putsPerSecond).padStart(15)} ${f(a?.p50Ms, 2).padStart(7)} ${f(a?.p99Ms, 2).padStart(7)} ${f(a?.cpuUsPerPut ?? undefined).padStart(11)} | ${f(e?.putsPerSecond).padStart(11)} ${f(e?.p50Ms, 2).padStart(7)} ${f(e?.p99Ms, 2).padStart(7)} ${f(e?.cpuUsPerPut ?? undefined).padStart(11)} | ${ratio.padStart(12)} ${p99.padStart(10)} ${cpu.padStart(10)}`,
      );
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  mkdirSync('bench/results', { recursive: true });
  const file = `bench/results/api-${meta.date.replace(/[:.]/g, '-')}.json`;
  writeFileSync(file, JSON.stringify({ meta, rows }, null, 2));
  process.stdout.write(`\nwrote ${file}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(
    `bench:api failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
  );
  process.exit(1);
});
