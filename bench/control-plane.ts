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
 *
 * Then the deployment scenario (`--deployment NODESxREPLICAS`, default 100x1000; `none` to
 * skip): a member as `etcetera serve --control-plane --nodes N` (controllers, scheduler and
 * N simulated kubelets, all in the member's process), one Deployment created as `kubectl
 * create deployment web --image=nginx:1.27 --replicas=R` creates it, and the time from its
 * create to all R pods created, bound, and Ready (watched), with the member's CPU and peak RSS.
 *
 * `--quick` runs 100 × 1,000 only (and the deployment scenario). Results go to
 * bench/results/control-plane-<time>.json.
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
    deployment: { type: 'string', default: '100x1000' },
    'cpu-prof': { type: 'boolean', default: false },
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

async function startMember(
  dir: string,
  parts: string[] = ['--scheduler'],
): Promise<{ child: ChildProcess; url: string }> {
  const [client, peer] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${client}`;
  // --cpu-prof: the member writes a V8 CPU profile into bench/results/ when it exits.
  if (args['cpu-prof'])
    mkdirSync(fileURLToPath(new URL('../../bench/results/', import.meta.url)), { recursive: true });
  const prof = args['cpu-prof']
    ? [
        '--cpu-prof',
        '--cpu-prof-dir',
        fileURLToPath(new URL('../../bench/results/', import.meta.url)),
      ]
    : [];
  const child = spawn(
    process.execPath,
    [
      ...prof,
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
      ...parts,
      '--scheduler-seed',
      '1',
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const deadline = Date.now() + 90_000;
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

const isReady = (p: Pod) =>
  (p.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions?.some(
    (c) => c.type === 'Ready' && c.status === 'True',
  ) === true;

/** `serve --control-plane --nodes N`, one Deployment of R replicas, until all R are Ready. */
async function runDeployment(s: Scenario) {
  const dir = mkdtempSync(join(tmpdir(), 'etcetera-control-plane-'));
  const { child, url } = await startMember(dir, ['--control-plane', '--nodes', String(s.nodes)]);
  const pid = child.pid as number;
  try {
    const kube = new KubeClient({ baseUrl: url, timeoutMs: 60_000 });
    const nodes = kube.resource(Resources.nodes);
    const readyNodes = async () =>
      (await nodes.list()).items.filter((n) =>
        (
          n as { status?: { conditions?: { type: string; status: string }[] } }
        ).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      ).length;
    const nodesDeadline = Date.now() + 300_000;
    while ((await readyNodes().catch(() => 0)) < s.nodes) {
      if (Date.now() > nodesDeadline) throw new Error(`${s.nodes} simulated nodes not Ready`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const created = new Set<string>();
    const bound = new Set<string>();
    const ready = new Set<string>();
    const at: { created?: number; bound?: number; ready?: number } = {};
    let allReady: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      allReady = resolve;
    });
    let start = 0;
    const seen = (p: Pod) => {
      const name = p.metadata.name ?? '';
      const now = performance.now();
      if (!created.has(name)) {
        created.add(name);
        if (created.size === s.pods) at.created = now;
      }
      if (p.spec?.nodeName && !bound.has(name)) {
        bound.add(name);
        if (bound.size === s.pods) at.bound = now;
      }
      if (isReady(p) && !ready.has(name)) {
        ready.add(name);
        if (ready.size === s.pods) {
          at.ready = now;
          allReady();
        }
      }
    };
    const informer = kube.informer(kube.resource<Pod>(Resources.pods, 'default'));
    informer.addHandlers({ onAdd: seen, onUpdate: (_o, p) => seen(p) });
    informer.start();
    await informer.waitForSync();
    const before = procUsage(pid);
    let peakRss = before?.rssBytes ?? 0;
    const sampler = setInterval(() => {
      const u = procUsage(pid);
      if (u && u.rssBytes > peakRss) peakRss = u.rssBytes;
    }, 250);
    start = performance.now();
    // What `kubectl create deployment web --image=nginx:1.27 --replicas=R` sends.
    await retrying(() =>
      kube.resource(Resources.deployments, 'default').create({
        metadata: { name: 'web', labels: { app: 'web' } },
        spec: {
          replicas: s.pods,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'nginx', image: 'nginx:1.27' }] },
          },
        },
      }),
    );
    await Promise.race([
      done,
      new Promise((r) => setTimeout(r, Number(args.timeout) * 1000).unref()),
    ]);
    const end = performance.now();
    clearInterval(sampler);
    const after = procUsage(pid);
    await informer.stop();
    const cpuSeconds = before && after ? after.cpuSeconds - before.cpuSeconds : Number.NaN;
    const secs = (t: number | undefined) => (t === undefined ? null : round((t - start) / 1000));
    return {
      nodes: s.nodes,
      replicas: s.pods,
      created: created.size,
      bound: bound.size,
      ready: ready.size,
      secondsToAllCreated: secs(at.created),
      secondsToAllBound: secs(at.bound),
      secondsToAllReady: secs(at.ready),
      member: {
        cpuSeconds: round(cpuSeconds),
        cpuShareOfOneCore: round(cpuSeconds / ((end - start) / 1000)),
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
  const results: unknown[] = [];
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
  if (args.deployment !== 'none') {
    const m = /^(\d+)x(\d+)$/.exec(args.deployment ?? '');
    if (!m)
      throw new Error(`--deployment: ${JSON.stringify(args.deployment)} is not NODESxREPLICAS`);
    const d = { nodes: Number(m[1]), pods: Number(m[2]) };
    console.log(
      `deployment: serve --control-plane --nodes ${d.nodes}, create deployment --replicas=${d.pods} (load average ${loadavg().map(round).join(' ')})`,
    );
    const r = await runDeployment(d);
    results.push({ deployment: r });
    console.log(
      `  ${r.ready}/${r.replicas} Ready (${r.created} created, ${r.bound} bound); all created ${r.secondsToAllCreated} s, all bound ${r.secondsToAllBound} s, all Ready ${r.secondsToAllReady} s after the create`,
    );
    console.log(
      `  member CPU ${r.member.cpuSeconds} s (${r.member.cpuShareOfOneCore} of one core), peak RSS ${r.member.peakRssMiB} MiB; load average ${r.loadAverage.join(' ')}`,
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
