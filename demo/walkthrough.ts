/**
 * The control-plane walkthrough behind `npm run demo`: a member started as
 * `etcetera serve --control-plane --nodes 3` in a child process (a temporary data directory,
 * free 127.0.0.1 ports), then, with kubectl when it is given (else with this package's
 * client, the same requests):
 *
 *   1. a Deployment `web` of 6 replicas with cpu/memory requests and a topology spread over
 *      the zones; the Pods are printed as they are scheduled (node, zone) and become Ready (IP);
 *   2. scale to 9;
 *   3. a new image, and the rollout as it goes (ready Pods never below 9 − maxUnavailable);
 *   4. a NoExecute taint on one node: its Pods are evicted and replaced on the other nodes;
 *   5. the member is stopped (SIGTERM) and the directory removed.
 *
 * Every wait is bounded (`timeoutMs`); `runWalkthrough` returns what it saw, for the test.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '../src/client/k8s/client.js';
import { Informer } from '../src/client/k8s/informer.js';
import { type KubeObject, Resources } from '../src/client/k8s/types.js';

export interface WalkthroughOptions {
  /** How to run the CLI: the executable and its first arguments (`[node, 'dist/cli.js']`). */
  command: readonly string[];
  /** kubectl's path; without it the same steps go through src/client. */
  kubectl?: string | undefined;
  /** The simulated nodes' readiness delay, ms (default 1000, so the stages can be seen). */
  readinessDelayMs?: number;
  /** Bound of each wait, ms (default 120 s). */
  timeoutMs?: number;
  log?: (line: string) => void;
}

export interface PodView {
  name: string;
  node: string;
  zone: string;
  ip: string;
  image: string;
  ready: boolean;
}

export interface WalkthroughReport {
  via: 'kubectl' | 'client';
  nodes: { name: string; zone: string }[];
  /** The Pods once the Deployment's 6 are Ready. */
  created: PodView[];
  /** Once the 9 are Ready. */
  scaled: PodView[];
  rollout: {
    image: string;
    revision: string | undefined;
    /** The fewest ready Pods and the most Pods (not terminating) seen during the rollout. */
    minReady: number;
    maxPods: number;
    pods: PodView[];
  };
  taint: { node: string; evicted: string[]; pods: PodView[] };
  /** The member's exit code after SIGTERM. */
  exitCode: number | null;
}

type Pod = KubeObject & {
  spec: { nodeName?: string; containers: { name: string; image: string }[] };
  status?: { podIP?: string; conditions?: { type: string; status: string }[] };
};
type Node = KubeObject & {
  status?: { conditions?: { type: string; status: string }[] };
};
type Deployment = KubeObject & {
  spec: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
  };
};

const ZONE = 'topology.kubernetes.io/zone';
const OLD_IMAGE = 'nginx:1.27';
const NEW_IMAGE = 'nginx:1.28';
const TAINT = { key: 'demo', value: 'maintenance', effect: 'NoExecute' };

/** The Deployment of step 1: requests, and one Pod per zone before a second anywhere. */
export const webDeployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: {
    replicas: 6,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: {
        terminationGracePeriodSeconds: 5,
        // ScheduleAnyway: with DoNotSchedule, Kubernetes still counts a tainted node's zone
        // (nodeTaintsPolicy Ignore), so the replacements of step 4 would stay Pending.
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: ZONE,
            whenUnsatisfiable: 'ScheduleAnyway',
            labelSelector: { matchLabels: { app: 'web' } },
          },
        ],
        containers: [
          {
            name: 'nginx',
            image: OLD_IMAGE,
            resources: { requests: { cpu: '100m', memory: '64Mi' } },
          },
        ],
      },
    },
  },
};

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const isReady = (p: Pod) =>
  p.metadata.deletionTimestamp === undefined &&
  (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

export async function runWalkthrough(o: WalkthroughOptions): Promise<WalkthroughReport> {
  const log = o.log ?? (() => {});
  const timeoutMs = o.timeoutMs ?? 120_000;
  const t0 = performance.now();
  const say = (line: string) =>
    log(`[${((performance.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${line}`);
  const dir = await mkdtemp(join(tmpdir(), 'etcetera-demo-'));
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${clientPort}`;
  const [exe, ...first] = o.command;
  if (!exe) throw new Error('runWalkthrough: an empty command');
  const serveArgs = [
    'serve',
    '--control-plane',
    '--nodes',
    '3',
    '--name',
    'demo',
    '--data-dir',
    join(dir, 'data'),
    '--listen-client-urls',
    url,
    '--listen-peer-urls',
    `http://127.0.0.1:${peerPort}`,
    '--node-readiness-delay',
    String(o.readinessDelayMs ?? 1000),
    '--scheduler-seed',
    '1',
    '--log-level',
    'warn',
  ];
  say(`starting: etcetera ${serveArgs.join(' ')}`);
  const child: ChildProcess = spawn(exe, [...first, ...serveArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (b: Buffer) => {
    output = (output + b.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
  let stopped = false;
  let informer: Informer<Pod> | undefined;

  const waitFor = async (what: string, cond: () => boolean | Promise<boolean>) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`the member exited while waiting for ${what}:\n${output}`);
      try {
        if (await cond()) return;
      } catch {}
      if (Date.now() > deadline)
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  try {
    const kube = new KubeClient({ baseUrl: url, timeoutMs: 20_000 });
    const nodesApi = kube.resource<Node>(Resources.nodes);
    let nodes: Node[] = [];
    await waitFor('3 Ready nodes', async () => {
      nodes = (await nodesApi.list()).items;
      return (
        nodes.length === 3 &&
        nodes.every((n) =>
          n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        )
      );
    });
    const zoneOf = new Map(
      nodes.map((n) => [n.metadata.name ?? '', n.metadata.labels?.[ZONE] ?? '']),
    );
    const nodeList = [...zoneOf]
      .map(([name, zone]) => ({ name, zone }))
      .sort((a, b) => a.name.localeCompare(b.name));
    say(`member up at ${url}; nodes: ${nodeList.map((n) => `${n.name} (${n.zone})`).join(', ')}`);

    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: demo, cluster: {server: "${url}"}}]`,
        'contexts: [{name: demo, context: {cluster: demo, user: demo, namespace: default}}]',
        'current-context: demo',
        'users: [{name: demo, user: {}}]',
        '',
      ].join('\n'),
    );
    const kubectl = (args: string[]): Promise<string> =>
      new Promise((resolve, reject) => {
        log(`$ kubectl ${args.join(' ')}`);
        execFile(
          o.kubectl as string,
          args,
          {
            env: { ...process.env, KUBECONFIG: kubeconfig, HOME: dir },
            cwd: dir,
            timeout: timeoutMs,
          },
          (err, stdout, stderr) => {
            if (err) reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`));
            else {
              for (const line of stdout.trimEnd().split('\n')) if (line) log(`  ${line}`);
              resolve(stdout);
            }
          },
        );
      });
    const via = o.kubectl ? 'kubectl' : 'client';
    const deployments = kube.resource<Deployment>(Resources.deployments, 'default');

    // What each Pod last showed, to print its stages once each.
    const stage = new Map<string, string>();
    const view = (p: Pod): PodView => {
      const node = p.spec.nodeName ?? '';
      return {
        name: p.metadata.name ?? '',
        node,
        zone: zoneOf.get(node) ?? '',
        ip: p.status?.podIP ?? '',
        image: p.spec.containers[0]?.image ?? '',
        ready: isReady(p),
      };
    };
    const track = (p: Pod) => {
      const v = view(p);
      const now = p.metadata.deletionTimestamp
        ? 'terminating'
        : v.ready
          ? 'ready'
          : v.node
            ? 'scheduled'
            : 'pending';
      const before = stage.get(v.name);
      if (before === now) return;
      stage.set(v.name, now);
      if (now === 'pending') say(`pod ${v.name} (${v.image}) created, waiting for a node`);
      else if (now === 'scheduled')
        say(`pod ${v.name} (${v.image}) scheduled on ${v.node} (${v.zone})`);
      else if (now === 'ready') say(`pod ${v.name} Ready on ${v.node} (${v.zone}) at ${v.ip}`);
      else say(`pod ${v.name} terminating on ${v.node}`);
    };
    const pods = new Informer<Pod>(kube.resource<Pod>(Resources.pods, 'default'), {
      labelSelector: 'app=web',
    });
    informer = pods;
    let watchStep: (() => void) | undefined;
    pods.addHandlers({
      onAdd: (p) => {
        track(p);
        watchStep?.();
      },
      onUpdate: (_o, p) => {
        track(p);
        watchStep?.();
      },
      onDelete: (p) => {
        say(`pod ${p.metadata.name} deleted`);
        stage.delete(p.metadata.name ?? '');
        watchStep?.();
      },
    });
    pods.start();
    await pods.waitForSync();
    const live = () => pods.list().filter((p) => !p.metadata.deletionTimestamp);
    const readyViews = () =>
      live()
        .filter(isReady)
        .map(view)
        .sort((a, b) => a.name.localeCompare(b.name));
    const byZone = (vs: PodView[]) => {
      const counts = new Map<string, number>();
      for (const v of vs) counts.set(v.zone, (counts.get(v.zone) ?? 0) + 1);
      return [...counts]
        .sort()
        .map(([z, n]) => `${z}: ${n}`)
        .join(', ');
    };
    const settled = (n: number, image: string) => () => {
      const l = live();
      return l.length === n && l.every((p) => isReady(p) && p.spec.containers[0]?.image === image);
    };
    const getPods = async () => {
      if (o.kubectl) await kubectl(['get', 'pods', '-o', 'wide']);
      else
        for (const v of readyViews()) log(`  ${v.name}  ${v.node}  ${v.zone}  ${v.ip}  ${v.image}`);
    };

    // 1. The Deployment.
    say(`step 1: a Deployment of 6 Pods (100m cpu, 64Mi each) spread over the zones, via ${via}`);
    if (o.kubectl) {
      const file = join(dir, 'web.json');
      await writeFile(file, JSON.stringify(webDeployment, null, 2));
      await kubectl(['apply', '-f', file]);
    } else {
      await deployments.create(webDeployment as unknown as Deployment);
    }
    await waitFor('6 Ready Pods', settled(6, OLD_IMAGE));
    const created = readyViews();
    say(`6 Pods Ready; per zone: ${byZone(created)}`);
    await getPods();

    // 2. Scale.
    say('step 2: scale to 9');
    if (o.kubectl) await kubectl(['scale', 'deployment', 'web', '--replicas=9']);
    else await deployments.patch('web', { spec: { replicas: 9 } }, 'merge');
    await waitFor('9 Ready Pods', settled(9, OLD_IMAGE));
    const scaled = readyViews();
    say(`9 Pods Ready; per zone: ${byZone(scaled)}`);

    // 3. A new image: the rollout, watched at every change of the Pods.
    say(`step 3: image ${NEW_IMAGE} (maxUnavailable 25% = 2, maxSurge 25% = 3 of 9)`);
    let minReady = Number.POSITIVE_INFINITY;
    let maxPods = 0;
    watchStep = () => {
      const l = live();
      minReady = Math.min(minReady, l.filter(isReady).length);
      maxPods = Math.max(maxPods, l.length);
    };
    watchStep();
    if (o.kubectl) {
      await kubectl(['set', 'image', 'deployment/web', `nginx=${NEW_IMAGE}`]);
      await kubectl([
        'rollout',
        'status',
        'deployment/web',
        `--timeout=${Math.ceil(timeoutMs / 1000)}s`,
      ]);
    } else {
      const d = await deployments.get('web');
      const tmpl = (webDeployment.spec.template.spec.containers[0] ?? {}) as Record<
        string,
        unknown
      >;
      await deployments.patch(
        'web',
        { spec: { template: { spec: { containers: [{ ...tmpl, image: NEW_IMAGE }] } } } },
        'merge',
      );
      await waitFor('the rollout', async () => {
        const now = await deployments.get('web');
        const s = now.status ?? {};
        return (
          (now.metadata.generation ?? 0) > (d.metadata.generation ?? 0) &&
          (s.observedGeneration ?? 0) >= (now.metadata.generation ?? 0) &&
          s.updatedReplicas === 9 &&
          s.availableReplicas === 9 &&
          s.replicas === 9
        );
      });
    }
    await waitFor(`9 Ready Pods on ${NEW_IMAGE}`, settled(9, NEW_IMAGE));
    watchStep = undefined;
    const revision = (await deployments.get('web')).metadata.annotations?.[
      'deployment.kubernetes.io/revision'
    ];
    const rolled = readyViews();
    say(
      `rollout done: revision ${revision}; ready Pods never below ${minReady}, never more than ${maxPods} Pods`,
    );

    // 4. Taint the node with the most Pods.
    const counts = new Map<string, number>();
    for (const v of rolled) counts.set(v.node, (counts.get(v.node) ?? 0) + 1);
    const target =
      [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0] ?? '';
    const evicted = rolled.filter((v) => v.node === target).map((v) => v.name);
    say(
      `step 4: taint ${target} ${TAINT.key}=${TAINT.value}:${TAINT.effect} (${evicted.length} Pods there)`,
    );
    if (o.kubectl)
      await kubectl(['taint', 'node', target, `${TAINT.key}=${TAINT.value}:${TAINT.effect}`]);
    else await nodesApi.patch(target, { spec: { taints: [TAINT] } }, 'merge');
    await waitFor(`9 Ready Pods off ${target}`, () => {
      const l = live();
      return settled(9, NEW_IMAGE)() && l.every((p) => p.spec.nodeName !== target);
    });
    await waitFor('the evicted Pods gone', () =>
      pods.list().every((p) => !evicted.includes(p.metadata.name ?? '')),
    );
    const tainted = readyViews();
    say(`${evicted.length} Pods evicted from ${target}, replaced; per zone: ${byZone(tainted)}`);
    await getPods();

    await pods.stop();
    informer = undefined;
    say('step 5: stopping the member');
    child.kill('SIGTERM');
    stopped = true;
    const exitCode = await exited;
    say(`member exited with code ${exitCode}`);
    return {
      via,
      nodes: nodeList,
      created,
      scaled,
      rollout: { image: NEW_IMAGE, revision, minReady, maxPods, pods: rolled },
      taint: { node: target, evicted, pods: tainted },
      exitCode,
    };
  } finally {
    if (informer) await informer.stop().catch(() => {});
    if (!stopped && child.exitCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    await rm(dir, { recursive: true, force: true });
  }
}
