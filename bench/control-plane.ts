/**
 * Control-plane benchmark: `npm run bench:control-plane [-- --quick | --scenarios 100x1000,1000x10000]`
 *
 * For each scenario (nodes × pods) a fresh member runs as `etcetera serve --scheduler` in a
 * child process. The benchmark creates the Nodes (Ready, 32 cpu, 64Gi, 110 pods each), then
 * the pods (100m cpu, 128Mi each; at most 64 creates in flight), and watches pods for
 * spec.nodeName, in the shape of kube-scheduler's scheduler_perf SchedulingBasic. It reports:
 *   - pods scheduled per second: pods / (last binding seen − first pod created);
 *   - p50 / p99 / max from a pod's create answer to its binding seen on the watch;
 *   - the member's CPU (user + system seconds, and as a share of one core) and its peak RSS
 *     while the pods are created and scheduled (Linux /proc), and the load average.
 * Each scenario is bounded by `--timeout` seconds (default 600): unbound pods are reported.
 * `--quick` runs 100 × 1,000 only. Results go to bench/results/control-plane-<time>.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isKubeApiError, KubeClient, Resources } from '../src/client/k8s/index.js';
import type { Pod } from '../src/scheduler/types.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    scenarios: { type: 'string' },
    timeout: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '64' },
  },
});

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const CLK_TCK = 100;

interface Scenario {
  nodes: number;
  pods: number;
}

function scenarios(): Scenario[] {
  const text = args.scenarios ?? (args.quick ? '100x1000' : '100x1000,1000x10000');
  return text.split(',').map((s) => {
    const m = /^(\d+)x(\d+)$/.exec(s.trim());
    if (!m) throw new Error(`--scenarios: ${JSON.stringify(s)} is not NODESxPODS`);
    return { nodes: Number(m[1]), pods: Number(m[2]) };
  });
}

function quantiles(xs: number[]): { p50: number; p99: number; max: number; n: number } {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
  return { p50: q(0.5), p99: q(0.99), max: s[s.length - 1] ?? Number.NaN, n: s.length };
}

const round = (v: number) => Math.round(v * 100) / 100;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** CPU seconds (user + system) and RSS bytes of a process, from /proc; undefined elsewhere. */
function procUsage(pid: number): { cpuSeconds: number; rssBytes: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    return { cpuSeconds: ticks / CLK_TCK, rssBytes: rss };
  } catch {
    return undefined;
  }
}

async function startMember(dir: string): Promise<{ child: ChildProcess; url: string }> {
  const [client, peer] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${client}`;
  const child = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--name',
      'bench',
      '--data-dir',
      join(dir, 'data'),
      '--listen-client-urls',
      url,
      '--listen-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--log-level',
      'warn',
      '--scheduler',
      '--scheduler-seed',
      '1',
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/api/v1/nodes`)).status === 200) break;
    } catch {}
    if (Date.now() > deadline) throw new Error('the member did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, url };
}

/** A write retried on 5xx and transport failures (a loaded machine times proposals out). */
async function retrying<T>(what: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await what();
    } catch (e) {
      if (isKubeApiError(e, 409) && attempt > 1) return undefined as T; // our earlier try landed
      const code = (e as { statusCode?: number }).statusCode ?? 0;
      if (attempt >= 10 || (code !== 0 && code < 500)) throw e;
      await new Promise((r) => setTimeout(r, 200 * attempt));
    }
  }
}

async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

async function run(s: Scenario) {
  const dir = mkdtempSync(join(tmpdir(), 'etcetera-control-plane-'));
  const { child, url } = await startMember(dir);
  const pid = child.pid as number;
  try {
    const kube = new KubeClient({ baseUrl: url });
    const nodes = kube.resource(Resources.nodes);
    const concurrency = Number(args.concurrency);
    const names = Array.from({ length: s.nodes }, (_, i) => `node-${i}`);
    await pool(names, concurrency, async (name) => {
      await retrying(() =>
        nodes.create({
          metadata: {
            name,
            labels: {
              'kubernetes.io/hostname': name,
              'topology.kubernetes.io/zone': `zone-${Number(name.slice(5)) % 3}`,
            },
          },
          spec: {},
        }),
      );
      const current = await retrying(() => nodes.get(name));
      await retrying(() =>
        nodes.updateStatus({
          ...current,
          status: {
            allocatable: { cpu: '32', memory: '64Gi', pods: '110' },
            capacity: { cpu: '32', memory: '64Gi', pods: '110' },
            conditions: [{ type: 'Ready', status: 'True' }],
          },
        }),
      );
    });

    const created = new Map<string, number>();
    const bound = new Map<string, number>();
    const informer = kube.informer(kube.resource<Pod>(Resources.pods, 'default'));
    let allBound: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      allBound = resolve;
    });
    const seen = (p: Pod) => {
      const name = p.metadata.name ?? '';
      if (p.spec?.nodeName && !bound.has(name)) {
        bound.set(name, performance.now());
        if (bound.size === s.pods) allBound();
      }
    };
    informer.addHandlers({ onAdd: seen, onUpdate: (_o, p) => seen(p) });
    informer.start();
    await informer.waitForSync();

    const before = procUsage(pid);
    let peakRss = before?.rssBytes ?? 0;
    const sampler = setInterval(() => {
      const u = procUsage(pid);
      if (u && u.rssBytes > peakRss) peakRss = u.rssBytes;
    }, 250);
    const pods = kube.resource(Resources.pods, 'default');
    const start = performance.now();
    const podNames = Array.from({ length: s.pods }, (_, i) => `pod-${i}`);
    await pool(podNames, concurrency, async (name) => {
      await retrying(() =>
        pods.create({
          metadata: { name, labels: { app: 'bench' } },
          spec: {
            containers: [
              {
                name: 'pause',
                image: 'registry.k8s.io/pause:3.10',
                resources: { requests: { cpu: '100m', memory: '128Mi' } },
              },
            ],
          },
        }),
      );
      created.set(name, performance.now());
    });
    const createdAll = performance.now();
    const timeoutMs = Number(args.timeout) * 1000;
    await Promise.race([done, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    const end = performance.now();
    clearInterval(sampler);
    const after = procUsage(pid);
    await informer.stop();

    const latencies: number[] = [];
    let lastBound = start;
    for (const [name, t] of bound) {
      const c = created.get(name);
      // A binding seen before its create answer arrived counts as 0.
      if (c !== undefined) latencies.push(Math.max(0, t - c));
      if (t > lastBound) lastBound = t;
    }
    const q = quantiles(latencies);
    const cpuSeconds = before && after ? after.cpuSeconds - before.cpuSeconds : Number.NaN;
    const wallSeconds = (end - start) / 1000;
    return {
      nodes: s.nodes,
      pods: s.pods,
      bound: bound.size,
      unbound: s.pods - bound.size,
      podsPerSecond: round(bound.size / ((lastBound - start) / 1000)),
      createSeconds: round((createdAll - start) / 1000),
      createToBindMs: { p50: round(q.p50), p99: round(q.p99), max: round(q.max) },
      member: {
        cpuSeconds: round(cpuSeconds),
        cpuShareOfOneCore: round(cpuSeconds / wallSeconds),
        peakRssMiB: round(peakRss / 1024 / 1024),
      },
      loadAverage: loadavg().map(round),
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const results = [];
  for (const s of scenarios()) {
    console.log(
      `scenario: ${s.nodes} nodes × ${s.pods} pods (load average ${loadavg().map(round).join(' ')})`,
    );
    const r = await run(s);
    results.push(r);
    console.log(
      `  ${r.bound}/${r.pods} bound, ${r.podsPerSecond} pods/s; create→bind p50 ${r.createToBindMs.p50} ms, p99 ${r.createToBindMs.p99} ms, max ${r.createToBindMs.max} ms`,
    );
    console.log(
      `  pods created in ${r.createSeconds} s; member CPU ${r.member.cpuSeconds} s (${r.member.cpuShareOfOneCore} of one core), peak RSS ${r.member.peakRssMiB} MiB; load average ${r.loadAverage.join(' ')}`,
    );
  }
  const out = fileURLToPath(new URL('../../bench/results/', import.meta.url));
  mkdirSync(out, { recursive: true });
  const file = join(out, `control-plane-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({ results }, null, 2)}\n`);
  console.log(`results: ${file}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
