/**
 * Table tests of each filter plugin, against the reasons kube-scheduler gives, and of the
 * FitError text that aggregates them.
 */

import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import t from 'tap';
import { Framework, fitErrorMessage } from '../../src/scheduler/framework.js';
import {
  affinityFilter,
  prepareAffinityFilter,
} from '../../src/scheduler/plugins/inter-pod-affinity.js';
import { nodeAffinityFilter } from '../../src/scheduler/plugins/node-affinity.js';
import { nodeReady } from '../../src/scheduler/plugins/node-ready.js';
import { nodeUnschedulable } from '../../src/scheduler/plugins/node-unschedulable.js';
import { resourcesFit } from '../../src/scheduler/plugins/resources-fit.js';
import { untoleratedTaint } from '../../src/scheduler/plugins/taint-toleration.js';
import { prepareSpreadFilter, spreadFilter } from '../../src/scheduler/plugins/topology-spread.js';
import { podRequests } from '../../src/scheduler/resources.js';
import type { NodeSelectorRequirement, Pod, PodAffinityTerm } from '../../src/scheduler/types.js';
import { clusterOf, node, nodeInfo, pod } from './fixtures.js';

t.test('NodeReady and NodeUnschedulable', async (t) => {
  const cases: [string, ReturnType<typeof node>, Pod, string[]][] = [
    ['ready', node('n', {}), pod('p'), []],
    ['not ready', node('n', { ready: 'False' }), pod('p'), ['node(s) were not ready']],
    ['unknown', node('n', { ready: 'Unknown' }), pod('p'), ['node(s) were not ready']],
    ['no condition', node('n', { ready: 'missing' }), pod('p'), ['node(s) were not ready']],
    [
      'not ready, tolerated',
      node('n', { ready: 'False' }),
      pod('p', {
        spec: { tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists' }] },
      }),
      [],
    ],
    [
      'unreachable needs its own toleration',
      node('n', { ready: 'Unknown' }),
      pod('p', {
        spec: { tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists' }] },
      }),
      ['node(s) were not ready'],
    ],
  ];
  for (const [name, n, p, want] of cases) {
    const { view } = clusterOf([n]);
    t.same(nodeReady(p, nodeInfo(view, 'n')), want, name);
  }
  const { view } = clusterOf([node('n', { unschedulable: true })]);
  t.same(nodeUnschedulable(pod('p'), nodeInfo(view, 'n')), ['node(s) were unschedulable']);
  const tolerant = pod('p', {
    spec: {
      tolerations: [
        { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
      ],
    },
  });
  t.same(nodeUnschedulable(tolerant, nodeInfo(view, 'n')), []);
});

t.test('NodeResourcesFit: cpu, memory, pods, other resources, init containers', async (t) => {
  const existing = [
    pod('a', { cpu: '1500m', memory: '1Gi', nodeName: 'n' }),
    pod('b', { cpu: '1', memory: '512Mi', nodeName: 'n' }),
  ];
  const { view } = clusterOf(
    [node('n', { cpu: '4', memory: '2Gi', pods: '3', extra: { 'example.com/gpu': '1' } })],
    existing,
  );
  const n = nodeInfo(view, 'n');
  t.equal(n.requested.get('cpu'), 2500);
  t.equal(n.requested.get('memory'), 1.5 * 1024 ** 3);
  const cases: [string, Pod, string[]][] = [
    ['fits exactly', pod('p', { cpu: '1.5', memory: '512Mi' }), []],
    ['one millicore too many', pod('p', { cpu: '1501m' }), ['Insufficient cpu']],
    ['memory', pod('p', { memory: '513Mi' }), ['Insufficient memory']],
    [
      'both, cpu first',
      pod('p', { cpu: '2', memory: '1Gi' }),
      ['Insufficient cpu', 'Insufficient memory'],
    ],
    ['exponent form', pod('p', { cpu: '1e3m' }), []],
    ['no requests', pod('p'), []],
    [
      'extended resource',
      pod('p', {
        spec: {
          containers: [
            { name: 'c', image: 'x', resources: { limits: { 'example.com/gpu': '2' } } },
          ],
        },
      }),
      ['Insufficient example.com/gpu'],
    ],
    [
      'an init container larger than the containers',
      pod('p', {
        cpu: '100m',
        spec: {
          initContainers: [{ name: 'i', image: 'x', resources: { requests: { cpu: '2' } } }],
        },
      }),
      ['Insufficient cpu'],
    ],
    [
      'overhead counts',
      pod('p', { cpu: '1', spec: { overhead: { cpu: '600m' } } }),
      ['Insufficient cpu'],
    ],
  ];
  for (const [name, p, want] of cases) t.same(resourcesFit(podRequests(p), n), want, name);

  const full = clusterOf([node('n', { pods: '2' })], existing).view;
  t.same(resourcesFit(podRequests(pod('p', { cpu: '100' })), nodeInfo(full, 'n')), [
    'Too many pods',
    'Insufficient cpu',
  ]);
});

t.test('TaintToleration filter', async (t) => {
  const taints = [
    { key: 'soft', value: 'x', effect: 'PreferNoSchedule' as const },
    { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' as const },
    { key: 'evict', effect: 'NoExecute' as const },
  ];
  const { view } = clusterOf([node('n', { taints })]);
  const n = nodeInfo(view, 'n');
  const cases: [string, Pod['spec'], string[]][] = [
    ['none tolerated', {}, ['node(s) had untolerated taint {dedicated: gpu}']],
    [
      'Equal on the value',
      {
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
      },
      ['node(s) had untolerated taint {evict: }'],
    ],
    [
      'wrong value',
      {
        tolerations: [
          { key: 'dedicated', value: 'cpu' },
          { key: 'evict', operator: 'Exists' },
        ],
      },
      ['node(s) had untolerated taint {dedicated: gpu}'],
    ],
    [
      'wrong effect',
      {
        tolerations: [
          { key: 'dedicated', value: 'gpu', effect: 'NoExecute' },
          { key: 'evict', operator: 'Exists' },
        ],
      },
      ['node(s) had untolerated taint {dedicated: gpu}'],
    ],
    [
      'both tolerated',
      {
        tolerations: [
          { key: 'dedicated', value: 'gpu' },
          { key: 'evict', operator: 'Exists' },
        ],
      },
      [],
    ],
    ['Exists without a key tolerates everything', { tolerations: [{ operator: 'Exists' }] }, []],
  ];
  for (const [name, spec, want] of cases)
    t.same(untoleratedTaint(pod('p', { spec }), n), want, name);
});

t.test('NodeAffinity: nodeSelector and required terms with every operator', async (t) => {
  const { view } = clusterOf([
    node('n', { labels: { zone: 'a', disk: 'ssd', cores: '16', weird: 'x1' } }),
  ]);
  const n = nodeInfo(view, 'n');
  const term = (...e: NodeSelectorRequirement[]) => ({
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: e }],
        },
      },
    },
  });
  const miss = ["node(s) didn't match Pod's node affinity/selector"];
  const cases: [string, Pod['spec'], string[]][] = [
    ['selector matches', { nodeSelector: { zone: 'a' } }, []],
    ['selector misses', { nodeSelector: { zone: 'b' } }, miss],
    ['In', term({ key: 'zone', operator: 'In', values: ['a', 'b'] }), []],
    ['In misses', term({ key: 'zone', operator: 'In', values: ['b'] }), miss],
    ['NotIn', term({ key: 'zone', operator: 'NotIn', values: ['b'] }), []],
    ['NotIn on an absent key', term({ key: 'gpu', operator: 'NotIn', values: ['x'] }), []],
    ['NotIn misses', term({ key: 'zone', operator: 'NotIn', values: ['a'] }), miss],
    ['Exists', term({ key: 'disk', operator: 'Exists' }), []],
    ['Exists misses', term({ key: 'gpu', operator: 'Exists' }), miss],
    ['DoesNotExist', term({ key: 'gpu', operator: 'DoesNotExist' }), []],
    ['DoesNotExist misses', term({ key: 'disk', operator: 'DoesNotExist' }), miss],
    ['Gt', term({ key: 'cores', operator: 'Gt', values: ['8'] }), []],
    ['Gt is strict', term({ key: 'cores', operator: 'Gt', values: ['16'] }), miss],
    ['Lt', term({ key: 'cores', operator: 'Lt', values: ['32'] }), []],
    ['Lt misses', term({ key: 'cores', operator: 'Lt', values: ['16'] }), miss],
    ['Gt on a non-integer label', term({ key: 'weird', operator: 'Gt', values: ['0'] }), miss],
    ['Gt on an absent label', term({ key: 'gpu', operator: 'Gt', values: ['0'] }), miss],
    [
      'expressions are ANDed',
      term(
        { key: 'zone', operator: 'In', values: ['a'] },
        { key: 'disk', operator: 'In', values: ['hdd'] },
      ),
      miss,
    ],
    [
      'terms are ORed',
      {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n'] }] },
              ],
            },
          },
        },
      },
      [],
    ],
    [
      'an empty term matches nothing',
      {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{}] },
          },
        },
      },
      miss,
    ],
    [
      'selector and affinity must both hold',
      { nodeSelector: { zone: 'b' }, ...term({ key: 'zone', operator: 'In', values: ['a'] }) },
      miss,
    ],
  ];
  for (const [name, spec, want] of cases)
    t.same(nodeAffinityFilter(pod('p', { spec }), n), want, name);
});

t.test('InterPodAffinity filter', async (t) => {
  const zone = (z: string) => ({ 'topology.kubernetes.io/zone': z });
  const nodes = [
    node('a1', { labels: zone('a') }),
    node('a2', { labels: zone('a') }),
    node('b1', { labels: zone('b') }),
    node('nolabel'),
  ];
  const web = (name: string, nodeName: string, spec = {}) =>
    pod(name, { nodeName, labels: { app: 'web' }, spec });
  const onZone = (
    sel: Record<string, string>,
    extra: Partial<PodAffinityTerm> = {},
  ): PodAffinityTerm => ({
    labelSelector: { matchLabels: sel },
    topologyKey: 'topology.kubernetes.io/zone',
    ...extra,
  });
  const run = (existing: Pod[], p: Pod, namespaces = {}) => {
    const { view } = clusterOf(nodes, existing, namespaces);
    const s = prepareAffinityFilter(p, view);
    return Object.fromEntries(
      view.nodes.map((n) => [n.name, s ? affinityFilter(p, n, s, view).join() : '']),
    );
  };
  const affinity = (term: PodAffinityTerm) => ({
    affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } },
  });
  const anti = (term: PodAffinityTerm) => ({
    affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } },
  });
  const AFF = "node(s) didn't match pod affinity rules";
  const ANTI = "node(s) didn't match pod anti-affinity rules";
  const EXIST = "node(s) didn't satisfy existing pods anti-affinity rules";

  t.same(
    run([web('w', 'a1')], pod('p', { spec: affinity(onZone({ app: 'web' })) })),
    { a1: '', a2: '', b1: AFF, nolabel: AFF },
    'affinity: the whole zone of a matching pod',
  );
  t.same(
    run([], pod('p', { labels: { app: 'web' }, spec: affinity(onZone({ app: 'web' })) })),
    { a1: '', a2: '', b1: '', nolabel: AFF },
    'the first pod of a group that matches its own term may go anywhere with the key',
  );
  t.same(
    run([], pod('p', { spec: affinity(onZone({ app: 'web' })) })),
    { a1: AFF, a2: AFF, b1: AFF, nolabel: AFF },
    'no matching pod and no self match: nowhere',
  );
  t.same(
    run([web('w', 'a1')], pod('p', { spec: anti(onZone({ app: 'web' })) })),
    { a1: ANTI, a2: ANTI, b1: '', nolabel: '' },
    'anti-affinity: not in the zone of a matching pod',
  );
  t.same(
    run([web('w', 'a1', anti(onZone({ app: 'db' })))], pod('p', { labels: { app: 'db' } })),
    { a1: EXIST, a2: EXIST, b1: '', nolabel: '' },
    "an existing pod's anti-affinity keeps the pod out of its zone",
  );
  t.same(
    run([web('w', 'a1')], pod('p', { namespace: 'other', spec: anti(onZone({ app: 'web' })) })),
    { a1: '', a2: '', b1: '', nolabel: '' },
    'terms apply in the pod’s own namespace by default',
  );
  t.same(
    run(
      [web('w', 'a1')],
      pod('p', {
        namespace: 'other',
        spec: anti(onZone({ app: 'web' }, { namespaces: ['default'] })),
      }),
    ),
    { a1: ANTI, a2: ANTI, b1: '', nolabel: '' },
    'listed namespaces',
  );
  t.same(
    run(
      [web('w', 'a1')],
      pod('p', {
        namespace: 'other',
        spec: anti(onZone({ app: 'web' }, { namespaceSelector: { matchLabels: { team: 'x' } } })),
      }),
      { default: { team: 'x' } },
    ),
    { a1: ANTI, a2: ANTI, b1: '', nolabel: '' },
    'namespaceSelector over namespace labels',
  );
  t.same(
    run(
      [web('w', 'a1')],
      pod('p', {
        namespace: 'other',
        spec: anti(onZone({ app: 'web' }, { namespaceSelector: {} })),
      }),
    ),
    { a1: ANTI, a2: ANTI, b1: '', nolabel: '' },
    'an empty namespaceSelector is every namespace',
  );
  t.same(
    run(
      [web('w', 'a1')],
      pod('p', {
        spec: anti({
          labelSelector: { matchLabels: { app: 'web' } },
          topologyKey: 'kubernetes.io/hostname',
        }),
      }),
    ),
    { a1: ANTI, a2: '', b1: '', nolabel: '' },
    'hostname topology: only that node',
  );
});

t.test('PodTopologySpread filter: maxSkew, minDomains, missing label, self match', async (t) => {
  const zone = (z: string) => ({ zone: z });
  const nodes = [
    node('a1', { labels: zone('a') }),
    node('a2', { labels: zone('a') }),
    node('b1', { labels: zone('b') }),
    node('c1', { labels: zone('c') }),
    node('x'),
  ];
  const web = (name: string, nodeName: string, deleting = false) =>
    pod(name, { nodeName, labels: { app: 'web' }, deleting });
  const spread = (maxSkew: number, extra = {}) => ({
    topologySpreadConstraints: [
      {
        maxSkew,
        topologyKey: 'zone',
        whenUnsatisfiable: 'DoNotSchedule' as const,
        labelSelector: { matchLabels: { app: 'web' } },
        ...extra,
      },
    ],
  });
  const run = (existing: Pod[], p: Pod, ns = nodes) => {
    const { view } = clusterOf(ns, existing);
    const s = prepareSpreadFilter(p, view.nodes);
    return Object.fromEntries(view.nodes.map((n) => [n.name, s ? spreadFilter(n, s).join() : '']));
  };
  const NO = "node(s) didn't match pod topology spread constraints";
  const LABEL = `${NO} (missing required label)`;
  const me = (spec: object) => pod('p', { labels: { app: 'web' }, spec });
  t.same(
    run([web('w1', 'a1'), web('w2', 'b1')], me(spread(1))),
    { a1: NO, a2: NO, b1: NO, c1: '', x: LABEL },
    'counts a=1 b=1 c=0: only c keeps skew ≤ 1',
  );
  t.same(
    run([web('w1', 'a1'), web('w2', 'b1')], me(spread(2))),
    { a1: '', a2: '', b1: '', c1: '', x: LABEL },
    'maxSkew 2 allows a and b',
  );
  t.same(
    run([web('w1', 'a1'), web('w2', 'b1'), web('w3', 'c1', true)], me(spread(1))),
    { a1: NO, a2: NO, b1: NO, c1: '', x: LABEL },
    'pods being deleted are not counted',
  );
  t.same(
    run([web('w1', 'a1')], pod('p', { labels: { app: 'other' }, spec: spread(1) })),
    { a1: '', a2: '', b1: '', c1: '', x: LABEL },
    'a pod that does not match its own selector adds nothing: a = 1 - 0 ≤ 1',
  );
  const two = [node('a1', { labels: zone('a') }), node('b1', { labels: zone('b') })];
  t.same(
    run([web('w1', 'a1'), web('w2', 'b1')], me(spread(1)), two),
    { a1: '', b1: '' },
    'two balanced domains',
  );
  t.same(
    run([web('w1', 'a1'), web('w2', 'b1')], me(spread(1, { minDomains: 3 })), two),
    { a1: NO, b1: NO },
    'minDomains 3 with 2 domains: the minimum counts as 0',
  );
  t.same(
    run([web('w1', 'a1')], me({ ...spread(1), nodeSelector: { zone: 'a' } })),
    { a1: '', a2: '', b1: '', c1: '', x: LABEL },
    'only nodes matching the pod’s nodeSelector are domains: a alone, skew 0',
  );
});

t.test('FitError text: counts per reason, sorted as strings, with a period', async (t) => {
  const reasons = new Map<string, readonly string[]>([
    ['n1', ['Insufficient cpu']],
    ['n2', ['Insufficient cpu']],
    ['n3', ['node(s) had untolerated taint {k: v}']],
  ]);
  t.equal(
    fitErrorMessage(3, reasons),
    '0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu.',
  );
  const multi = new Map<string, readonly string[]>([
    ['n1', ['Insufficient cpu', 'Insufficient memory']],
    ['n2', ['Too many pods', 'Insufficient cpu']],
    ['n3', ["node(s) didn't match Pod's node affinity/selector"]],
  ]);
  t.equal(
    fitErrorMessage(3, multi),
    "0/3 nodes are available: 1 Insufficient memory, 1 Too many pods, 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu.",
  );

  // The framework: the first refusing plugin decides a node's reasons.
  const { view } = clusterOf([
    node('n1', { cpu: '1' }),
    node('n2', { cpu: '1' }),
    node('n3', { cpu: '8', taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] }),
    node('n4', {
      cpu: '1',
      ready: 'False',
      taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }],
    }),
  ]);
  const fw = new Framework(xoroshiro128plus(1));
  const d = fw.schedule(pod('big', { cpu: '2' }), view);
  t.same(d, {
    kind: 'unschedulable',
    message:
      '0/4 nodes are available: 1 node(s) had untolerated taint {k: v}, 1 node(s) were not ready, 2 Insufficient cpu.',
    reasons: d.kind === 'unschedulable' ? d.reasons : undefined,
  });
  t.same(fw.schedule(pod('p'), clusterOf([]).view), {
    kind: 'unschedulable',
    message: 'no nodes available to schedule pods',
    reasons: new Map(),
  });
});
