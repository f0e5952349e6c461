/**
 * Table tests of each score plugin (raw score and normalisation, worked out by hand from
 * kube-scheduler's formulas), quantity parsing (a table and a fast-check property against
 * exact arithmetic), the seeded tie-break, and the example pod: a zone topology
 * spread with DoNotSchedule and a preferred anti-affinity on the hostname.
 */
import fc from 'fast-check';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import t from 'tap';
import { Framework, numFeasibleNodesToFind } from '../../src/scheduler/framework.js';
import { balancedAllocation } from '../../src/scheduler/plugins/balanced-allocation.js';
import { imageLocality } from '../../src/scheduler/plugins/image-locality.js';
import {
  affinityScore,
  minMaxNormalize,
  prepareAffinityScore,
} from '../../src/scheduler/plugins/inter-pod-affinity.js';
import { leastAllocated } from '../../src/scheduler/plugins/least-allocated.js';
import { NodeAffinityScore } from '../../src/scheduler/plugins/node-affinity.js';
import { defaultNormalize } from '../../src/scheduler/plugins/normalize.js';
import { TaintTolerationScore } from '../../src/scheduler/plugins/taint-toleration.js';
import {
  normalizeSpread,
  prepareSpreadScore,
  spreadScore,
} from '../../src/scheduler/plugins/topology-spread.js';
import { milliValue, value } from '../../src/scheduler/quantity.js';
import { podNonZeroRequests, podRequests } from '../../src/scheduler/resources.js';
import type { Pod } from '../../src/scheduler/types.js';
import { clusterOf, node, nodeInfo, pod } from './fixtures.js';

t.test('quantities as Kubernetes reads them', async (t) => {
  const milli: [string, number | undefined][] = [
    ['100m', 100],
    ['1', 1000],
    ['0.5', 500],
    ['.5', 500],
    ['1e3', 1_000_000],
    ['1E-3', 1],
    ['0.0001', 1],
    ['2k', 2_000_000],
    ['1u', 1],
    ['+3', 3000],
    ['-1', -1000],
    ['1.5.1', undefined],
    ['abc', undefined],
    ['1Q', undefined],
    ['', undefined],
  ];
  for (const [q, want] of milli) t.equal(milliValue(q), want, `milli ${q}`);
  const units: [string | number, number | undefined][] = [
    ['1Gi', 1024 ** 3],
    ['1.5Gi', 1.5 * 1024 ** 3],
    ['128974848', 128974848],
    ['129e6', 129_000_000],
    ['129M', 129_000_000],
    ['123Mi', 123 * 1024 ** 2],
    ['1Ki', 1024],
    ['0.1', 1],
    ['110', 110],
    [110, 110],
    ['1Ei', Number.MAX_SAFE_INTEGER],
  ];
  for (const [q, want] of units) t.equal(value(q), want, `value ${q}`);
  const suffixes: [string, bigint, bigint][] = [
    ['', 1n, 1n],
    ['m', 1n, 1000n],
    ['k', 1000n, 1n],
    ['M', 10n ** 6n, 1n],
    ['Ki', 1024n, 1n],
    ['Mi', 1024n ** 2n, 1n],
    ['Gi', 1024n ** 3n, 1n],
  ];
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 10_000_000 }),
      fc.integer({ min: 0, max: 3 }),
      fc.constantFrom(...suffixes),
      (n, decimals, [suffix, mul, div]) => {
        const text = `${(n / 10 ** decimals).toFixed(decimals)}${suffix}`;
        const num = BigInt(n) * mul * 1000n;
        const den = div * 10n ** BigInt(decimals);
        const ceil = num / den + (num % den === 0n ? 0n : 1n);
        const want =
          ceil > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(ceil);
        return milliValue(text) === want;
      },
    ),
  );
});

t.test('requests: limits stand in for absent requests; non-zero defaults', async (t) => {
  const p: Pod = pod('p', {
    spec: {
      containers: [
        {
          name: 'a',
          image: 'x',
          resources: { limits: { cpu: '2', memory: '1Gi' }, requests: { cpu: '500m' } },
        },
        { name: 'b', image: 'x' },
      ],
    },
  });
  t.same(Object.fromEntries(podRequests(p)), { cpu: 500, memory: 1024 ** 3 });
  t.same(Object.fromEntries(podNonZeroRequests(p)), {
    cpu: 600,
    memory: 1024 ** 3 + 200 * 1024 ** 2,
  });
});

t.test('LeastAllocated and BalancedAllocation', async (t) => {
  const { view } = clusterOf(
    [node('n', { cpu: '4', memory: '8Gi' })],
    [pod('a', { cpu: '1', memory: '2Gi', nodeName: 'n' })],
  );
  const n = nodeInfo(view, 'n');
  // cpu: (4000 - 2000) * 100 / 4000 = 50; memory: (8 - 4) * 100 / 8 = 50.
  t.equal(leastAllocated(podNonZeroRequests(pod('p', { cpu: '1', memory: '2Gi' })), n), 50);
  // A pod without requests counts 100m and 200Mi: cpu (4000 - 1100) × 100 / 4000 = 72.5 → 72;
  // memory (8192 - 2048 - 200) Mi × 100 / 8192 Mi = 72.6 → 72; mean 72.
  t.equal(leastAllocated(podNonZeroRequests(pod('p')), n), 72);
  // cpu 6000 > 4000 scores 0; memory 72: mean 36.
  t.equal(leastAllocated(podNonZeroRequests(pod('p', { cpu: '5' })), n), 36, 'cpu over: 0');
  // fractions cpu 2/4 = 0.5, memory 4/8 = 0.5: perfectly balanced.
  t.equal(balancedAllocation(podRequests(pod('p', { cpu: '1', memory: '2Gi' })), n), 100);
  // cpu 4/4 = 1, memory 2/8 = 0.25: std 0.375 → 62.
  t.equal(balancedAllocation(podRequests(pod('p', { cpu: '3' })), n), 62);
  // capped at 1: cpu 6/4 → 1.
  t.equal(balancedAllocation(podRequests(pod('p', { cpu: '5' })), n), 62);
});

t.test('ImageLocality', async (t) => {
  const MB = 1024 * 1024;
  const { view } = clusterOf([
    node('big', {
      images: [{ names: ['nginx:1.27', 'docker.io/library/nginx:1.27'], sizeBytes: 500 * MB }],
    }),
    node('small', { images: [{ names: ['busybox'], sizeBytes: 5 * MB }] }),
    node('none'),
    node('also', { images: [{ names: ['nginx:1.27'], sizeBytes: 500 * MB }] }),
  ]);
  const p = pod('p', { image: 'nginx:1.27' });
  // 500 MB × 2/4 nodes = 250 MB; (250 - 23) / (1000 - 23) × 100 = 23.
  t.equal(imageLocality(p, nodeInfo(view, 'big'), view), 23);
  t.equal(imageLocality(p, nodeInfo(view, 'none'), view), 0);
  t.equal(
    imageLocality(pod('q', { image: 'busybox' }), nodeInfo(view, 'small'), view),
    0,
    'below 23 MB',
  );
  t.equal(
    imageLocality(pod('q', { image: 'busybox:latest' }), nodeInfo(view, 'small'), view),
    0,
    'untagged is :latest',
  );
});

t.test('NodeAffinity preferred weights and TaintToleration PreferNoSchedule', async (t) => {
  const { view } = clusterOf([
    node('a', { labels: { zone: 'a', disk: 'ssd' } }),
    node('b', { labels: { zone: 'b', disk: 'ssd' } }),
    node('c', {
      labels: { zone: 'c' },
      taints: [
        { key: 'x', effect: 'PreferNoSchedule' },
        { key: 'y', effect: 'PreferNoSchedule' },
      ],
    }),
    node('d', { taints: [{ key: 'x', effect: 'PreferNoSchedule' }] }),
  ]);
  const p = pod('p', {
    spec: {
      affinity: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 30,
              preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
            },
            { weight: 10, preference: { matchExpressions: [{ key: 'disk', operator: 'Exists' }] } },
          ],
        },
      },
    },
  });
  const raw = view.nodes.map((n) => NodeAffinityScore.score(p, n, true, view));
  t.same(raw, [40, 10, 0, 0]);
  t.same(NodeAffinityScore.normalize?.(raw, view.nodes, true), [100, 25, 0, 0]);
  const taintRaw = view.nodes.map((n) => TaintTolerationScore.score(p, n, undefined, view));
  t.same(taintRaw, [0, 0, 2, 1]);
  t.same(defaultNormalize(taintRaw, true), [100, 100, 0, 50]);
  const tolerant = pod('q', {
    spec: { tolerations: [{ key: 'x', operator: 'Exists', effect: 'PreferNoSchedule' }] },
  });
  t.same(
    view.nodes.map((n) => TaintTolerationScore.score(tolerant, n, undefined, view)),
    [0, 0, 1, 0],
  );
});

t.test('InterPodAffinity preferred weights, symmetry, min-max normalisation', async (t) => {
  const z = (zone: string) => ({ zone });
  const nodes = [
    node('a1', { labels: z('a') }),
    node('a2', { labels: z('a') }),
    node('b1', { labels: z('b') }),
    node('c1', { labels: z('c') }),
  ];
  const existing = [
    pod('db', { nodeName: 'a1', labels: { app: 'db' } }),
    pod('web', { nodeName: 'b1', labels: { app: 'web' } }),
    pod('cache', {
      nodeName: 'c1',
      labels: { app: 'cache' },
      spec: {
        affinity: {
          podAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 5,
                podAffinityTerm: {
                  labelSelector: { matchLabels: { app: 'api' } },
                  topologyKey: 'zone',
                },
              },
            ],
          },
        },
      },
    }),
  ];
  const { view } = clusterOf(nodes, existing);
  const p = pod('p', {
    labels: { app: 'api' },
    spec: {
      affinity: {
        podAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 20,
              podAffinityTerm: {
                labelSelector: { matchLabels: { app: 'db' } },
                topologyKey: 'zone',
              },
            },
          ],
        },
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 10,
              podAffinityTerm: {
                labelSelector: { matchLabels: { app: 'web' } },
                topologyKey: 'zone',
              },
            },
          ],
        },
      },
    },
  });
  const s = prepareAffinityScore(p, view);
  t.ok(s);
  const raw = view.nodes.map((n) => affinityScore(n, s as Map<string, number>));
  t.same(raw, [20, 20, -10, 5], 'db zone +20, web zone -10, cache prefers api +5');
  // min -10, max 20: (s + 10) / 30 × 100.
  t.same(minMaxNormalize(raw), [100, 100, 0, 50]);
  t.equal(
    prepareAffinityScore(pod('plain'), clusterOf(nodes).view),
    undefined,
    'nothing to do: skipped',
  );
});

t.test('PodTopologySpread ScheduleAnyway score', async (t) => {
  const z = (zone: string) => ({ zone });
  const nodes = [
    node('a1', { labels: z('a') }),
    node('b1', { labels: z('b') }),
    node('c1', { labels: z('c') }),
    node('x'),
  ];
  const web = (name: string, nodeName: string) => pod(name, { nodeName, labels: { app: 'web' } });
  const { view } = clusterOf(nodes, [web('1', 'a1'), web('2', 'a1'), web('3', 'b1')]);
  const p = pod('p', {
    labels: { app: 'web' },
    spec: {
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: 'zone',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: { matchLabels: { app: 'web' } },
        },
      ],
    },
  });
  const s = prepareSpreadScore(p, view.nodes, view.nodes);
  t.ok(s);
  // 3 domains: weight ln(5) ≈ 1.609; counts a=2 → 3.22 → 3, b=1 → 2, c=0 → 0; x has no key.
  const raw = view.nodes.map((n) => spreadScore(p, n, s as NonNullable<typeof s>));
  t.same(raw, [3, 2, 0, 0]);
  // max 3, min 0: 100 × (3 + 0 - s) / 3.
  t.same(normalizeSpread(raw, view.nodes, s), [0, 33, 100, 0]);
});

t.test('ties are broken by the seeded generator, the same way for the same seed', async (t) => {
  const nodes = Array.from({ length: 10 }, (_, i) => node(`n${i}`));
  const picks = (seed: number) => {
    const fw = new Framework(xoroshiro128plus(seed));
    const { view } = clusterOf(nodes);
    return Array.from({ length: 20 }, (_, i) => fw.schedule(pod(`p${i}`), view)).map((d) =>
      d.kind === 'bind' ? d.node : '',
    );
  };
  t.same(picks(7), picks(7), 'deterministic for one seed');
  t.not(picks(7).join(), picks(8).join(), 'another seed picks differently');
  t.ok(new Set(picks(7)).size > 3, 'equal nodes are all candidates');
  t.equal(numFeasibleNodesToFind(50), 50);
  t.equal(numFeasibleNodesToFind(1000), 420);
  t.equal(numFeasibleNodesToFind(5000), 500);
  t.equal(numFeasibleNodesToFind(1000, 100), 1000);
});

t.test(
  "the issue's example pod: zone spread (DoNotSchedule) + preferred hostname anti-affinity",
  async (t) => {
    const zones = { a: ['a1', 'a2'], b: ['b1', 'b2'], c: ['c1', 'c2'] };
    const nodes = Object.entries(zones).flatMap(([zone, names]) =>
      names.map((n) => node(n, { labels: { 'topology.kubernetes.io/zone': zone } })),
    );
    const example = (name: string): Pod =>
      pod(name, {
        labels: { app: 'web' },
        cpu: '100m',
        spec: {
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'topology.kubernetes.io/zone',
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchLabels: { app: 'web' } },
            },
          ],
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    labelSelector: { matchLabels: { app: 'web' } },
                    topologyKey: 'kubernetes.io/hostname',
                  },
                },
              ],
            },
          },
        },
      });
    for (const seed of [1, 2, 3]) {
      const { cache } = clusterOf(nodes);
      const fw = new Framework(xoroshiro128plus(seed));
      const placed: string[] = [];
      for (let i = 0; i < 6; i++) {
        const p = example(`web-${i}`);
        const d = fw.schedule(p, cache.view());
        if (d.kind !== 'bind') throw new Error(`pod ${i} unschedulable`);
        cache.assume(p, d.node);
        placed.push(d.node);
        const perZone = Object.values(zones).map(
          (ns) => placed.filter((n) => ns.includes(n)).length,
        );
        t.ok(
          Math.max(...perZone) - Math.min(...perZone) <= 1,
          `seed ${seed} pod ${i}: zones ${perZone}`,
        );
      }
      t.equal(new Set(placed).size, 6, `seed ${seed}: six pods on six different hosts (${placed})`);
      // A seventh: every zone holds 2, every host 1; spread allows any zone, all hosts tie.
      const d = fw.schedule(example('web-6'), cache.view());
      t.equal(d.kind, 'bind');
    }
    // With a zone full, the spread refuses it and the message says why.
    const { cache } = clusterOf(
      nodes.map((n) =>
        n.metadata.name?.startsWith('c')
          ? { ...n, status: { ...n.status, allocatable: { cpu: '0', memory: '1Gi', pods: '110' } } }
          : n,
      ),
    );
    const fw = new Framework(xoroshiro128plus(1));
    for (let i = 0; i < 2; i++) {
      const p = example(`w${i}`);
      const d = fw.schedule(p, cache.view());
      if (d.kind !== 'bind') throw new Error('unschedulable');
      cache.assume(p, d.node);
    }
    const third = fw.schedule(example('w2'), cache.view());
    t.same(
      third.kind === 'unschedulable' ? third.message : third,
      "0/6 nodes are available: 2 Insufficient cpu, 4 node(s) didn't match pod topology spread constraints.",
      'a and b hold one each, c has no cpu: skew would be 2',
    );
  },
);
