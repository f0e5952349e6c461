/**
 * Watch fan-out benchmark, etcetera side by side with etcd 3.4:
 *   `npm run bench:fanout -- --watchers 10000 --rate 100 --duration 20 [--vs-etcd]`
 *   `npm run bench:fanout -- --scenario all --vs-etcd --repeat 3`
 *
 * Every run starts the server (a member: `node .build/src/cli.js serve`; or `etcd`) as a child
 * process on 127.0.0.1, load generators in child processes (each owning a share of the
 * connections and their watchers, real sockets on loopback), and a writer process putting at
 * the rate with each value stamped with its send time. It prints deliveries/s, latency from
 * write start to watcher receipt (p50, p99, p99.9, max; merged hdr histograms), events lost,
 * duplicated and out of order (per watcher, against the revisions the writer got back), the
 * server's CPU and RSS (/proc), the generators' CPU and event-loop load (to tell a client-bound
 * run from a server-bound one), and the machine's.
 *
 * Scenarios (flags override their defaults):
 *   broadcast  W watchers on one prefix over 100 connections, W = 1,000 / 5,000 / 10,000, 100 writes/s
 *   kubelet    10,000 watchers, each on its own connection and prefix, 1,000 writes/s spread over them
 *   ceiling    1,000 watchers on one prefix, 100 connections, 1,000 and 2,000 writes/s
 *
 * Flags: --scenario broadcast|kubelet|ceiling|all, --watchers N[,N..], --rate N[,N..],
 * --duration S, --connections N (or "each": one per watcher), --value-size B,
 * --layout shared|own, --keys N (keys per prefix), --generators N, --repeat N, --vs-etcd,
 * --etcd-only, --cpu-prof (the member's V8 profile, summarised), --drain S, --setup-timeout S,
 * --max-in-flight N, --protocol grpc|json (how etcetera is driven; default grpc, the code
 * path etcd is driven by), --out DIR, --cli PATH (another build's cli.js, e.g. main's, to compare
 * branches; the member runs from a private copy of its directory either way), --workers N[,N..]
 * (the member's --workers: each value is one more etcetera run of every shape, beside the one
 * etcd run; the server's CPU and RSS then include its worker processes).
 * Writes bench/results/fanout-<time>.json (metadata: commit, node, flags) and .html (plot).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LAYOUTS, type Layout, SCENARIOS, type Scenario } from './fanout-plan.js';
import { checkAims, groupRuns, html, printGroup } from './fanout-report.js';
import { type RunResult, type RunShape, runOnce } from './fanout-run.js';
import { stopAll } from './lib/children.js';
import type { System } from './lib/servers.js';

const { values: args } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'broadcast' },
    watchers: { type: 'string' },
    rate: { type: 'string' },
    duration: { type: 'string', default: '20' },
    connections: { type: 'string' },
    'value-size': { type: 'string', default: '256' },
    layout: { type: 'string' },
    keys: { type: 'string' },
    generators: { type: 'string', default: '2' },
    repeat: { type: 'string', default: '1' },
    'vs-etcd': { type: 'boolean', default: false },
    'etcd-only': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    drain: { type: 'string', default: '60' },
    'setup-timeout': { type: 'string', default: '180' },
    'max-in-flight': { type: 'string', default: '1000' },
    out: { type: 'string' },
    cli: { type: 'string' },
    protocol: { type: 'string', default: 'grpc' },
    workers: { type: 'string' },
  },
});

const root = fileURLToPath(new URL('../..', import.meta.url));
const outDir = args.out ?? join(root, 'bench', 'results');

const DEFAULTS: Record<
  Scenario,
  { watchers: number[]; rate: number[]; connections: number | 'each'; layout: Layout; keys: number }
> = {
  broadcast: {
    watchers: [1000, 5000, 10000],
    rate: [100],
    connections: 100,
    layout: 'shared',
    keys: 100,
  },
  kubelet: { watchers: [10000], rate: [1000], connections: 'each', layout: 'own', keys: 4 },
  ceiling: { watchers: [1000], rate: [1000, 2000], connections: 100, layout: 'shared', keys: 100 },
};

function list(s: string | undefined): number[] | undefined {
  return s === undefined ? undefined : s.split(',').map((x) => Number(x.trim()));
}

function positive(name: string, n: number): number {
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`);
  return n;
}

/** Every run shape the flags ask for, in order. */
function plan(): RunShape[] {
  const scenarios: Scenario[] =
    args.scenario === 'all' ? [...SCENARIOS] : [args.scenario as Scenario];
  for (const s of scenarios) if (!SCENARIOS.includes(s)) throw new Error(`unknown --scenario ${s}`);
  if (args.layout !== undefined && !LAYOUTS.includes(args.layout as Layout))
    throw new Error(`--layout is shared or own`);
  const protocol = args.protocol;
  if (protocol !== 'grpc' && protocol !== 'json') throw new Error('--protocol is grpc or json');
  const shapes: RunShape[] = [];
  for (const scenario of scenarios) {
    const d = DEFAULTS[scenario];
    for (const watchers of list(args.watchers) ?? d.watchers) {
      for (const rate of list(args.rate) ?? d.rate) {
        const conns = args.connections ?? String(d.connections);
        const connections =
          conns === 'each' ? watchers : Math.min(watchers, positive('connections', Number(conns)));
        shapes.push({
          scenario,
          watchers: positive('watchers', watchers),
          connections,
          rate: positive('rate', rate),
          durationS: positive('duration', Number(args.duration)),
          valueBytes: Math.max(8, Number(args['value-size'])),
          layout: (args.layout as Layout | undefined) ?? d.layout,
          keysPerPrefix: positive('keys', Number(args.keys ?? d.keys)),
          maxInFlight: positive('max-in-flight', Number(args['max-in-flight'])),
          protocol,
        });
      }
    }
  }
  return shapes;
}

function tryRun(cmd: string, argv: string[]): string | undefined {
  try {
    return execFileSync(cmd, argv, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

function metadata(systems: System[]) {
  return {
    date: new Date().toISOString(),
    commit: tryRun('git', ['-C', root, 'describe', '--always', '--dirty']) ?? 'unknown',
    node: process.version,
    etcd: systems.includes('etcd') ? tryRun('etcd', ['--version'])?.split('\n')[0] : undefined,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    loadavgStart: loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
    uptime: tryRun('uptime', []),
    command: `bench:fanout ${process.argv.slice(2).join(' ')}`,
    flags: args,
  };
}

async function main(): Promise<void> {
  const built = resolve(args.cli ?? join(root, '.build', 'src', 'cli.js'));
  if (!existsSync(built)) throw new Error(`${built} is missing: run npm run bench:build first`);
  const cli = snapshotCli(built);
  const systems: System[] = args['etcd-only']
    ? ['etcd']
    : args['vs-etcd']
      ? ['etcetera', 'etcd']
      : ['etcetera'];
  const shapes = plan();
  const workerCounts = list(args.workers);
  const variants: { system: System; workers?: number }[] = systems.flatMap((system) =>
    system === 'etcetera' && workerCounts !== undefined
      ? workerCounts.map((workers) => ({ system, workers }))
      : [{ system }],
  );
  const repeats = positive('repeat', Number(args.repeat));
  const meta = metadata(systems);
  const stamp = meta.date.replace(/[:.]/g, '-');
  const options = {
    cli,
    generators: positive('generators', Number(args.generators)),
    setupTimeoutS: Number(args['setup-timeout']),
    drainS: Number(args.drain),
    ...(args['cpu-prof'] ? { cpuProfDir: join(outDir, `fanout-${stamp}-prof`) } : {}),
  };
  console.log(
    `fan-out benchmark: ${shapes.length} configurations × ${repeats} × ${systems.join(' + ')}; ${meta.uptime}`,
  );
  const runs: RunResult[] = [];
  for (const shape of shapes) {
    for (let rep = 0; rep < repeats; rep++) {
      // Alternate which system goes first, so a change in machine load does not favour one.
      const order = rep % 2 === 0 ? variants : [...variants].reverse();
      for (const { system, workers } of order) {
        const w = workers === undefined ? '' : ` workers=${workers}`;
        process.stdout.write(
          `  ${system}${w} ${shape.scenario} W=${shape.watchers} C=${shape.connections} rate=${shape.rate} run ${rep + 1} ... `,
        );
        try {
          const r = await runOnce(
            system,
            shape,
            { ...options, ...(workers !== undefined ? { workers } : {}) },
            rep + 1,
          );
          runs.push(r);
          console.log(
            `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${Math.round(r.deliveriesPerS)}/s, lost ${r.lost}; ${r.bottleneck}`,
          );
          if (r.profile) printProfile(r.profile);
        } catch (e) {
          console.log(`FAILED: ${(e as Error).message}`);
        }
      }
    }
  }
  const groups = groupRuns(runs);
  console.log('');
  for (const g of groups) console.log(`${printGroup(g).join('\n')}\n`);
  for (const line of checkAims(groups)) console.log(line);
  mkdirSync(outDir, { recursive: true });
  const base = join(outDir, `fanout-${stamp}`);
  writeFileSync(
    `${base}.json`,
    `${JSON.stringify({ meta: { ...meta, loadavgEnd: loadavg() }, runs }, null, 2)}\n`,
  );
  writeFileSync(`${base}.html`, html(groups, meta));
  console.log(`\nresults: ${base}.json, ${base}.html`);
}

/**
 * A private copy of the built member (the directory of `built`, without source maps) under
 * .build, so that someone rebuilding .build during a long run cannot hand a member a half-
 * written tree. It stays below the repository, so packages still resolve from node_modules.
 */
function snapshotCli(built: string): string {
  const snapshot = join(root, '.build', `fanout-member-${process.pid}`);
  cpSync(dirname(built), join(snapshot, 'src'), {
    recursive: true,
    filter: (p) => !p.endsWith('.map'),
  });
  process.once('exit', () => rmSync(snapshot, { recursive: true, force: true }));
  return join(snapshot, 'src', basename(built));
}

function printProfile(p: NonNullable<RunResult['profile']>): void {
  console.log(`    member CPU profile (${p.totalMs} ms on CPU), self time:`);
  for (const f of p.functions)
    console.log(`      ${f.selfPct.toFixed(1).padStart(5)}%  ${f.where}`);
}

const deadline = setTimeout(
  () => {
    console.error('fan-out benchmark: overall time limit reached');
    process.exit(2);
  },
  4 * 3600 * 1000,
);
deadline.unref();

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => stopAll(5000));
