import fc from 'fast-check';
import t from 'tap';
import { KubeLibError } from '../../../src/k8s/errors.js';
import { cloneJson, type JsonMap, type JsonValue } from '../../../src/k8s/json.js';
import { applyMergePatch } from '../../../src/k8s/patch.js';
import { smpKinds, smpSchemaFor } from '../../../src/k8s/smp-schemas.js';
import { strategicMerge } from '../../../src/k8s/strategic-merge.js';

/** Results are read through property chains; a loose type keeps those short. */
// biome-ignore lint/suspicious/noExplicitAny: test documents are navigated by property chains
type Doc = any;

const deploymentSchema = smpSchemaFor('apps', 'v1', 'Deployment');
const podSchema = smpSchemaFor('', 'v1', 'Pod');
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

function deployment(spec: JsonMap, metadata: JsonMap = {}): JsonMap {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default', labels: { app: 'web' }, ...metadata },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec },
    },
  };
}

function libError(fn: () => unknown): KubeLibError {
  try {
    fn();
  } catch (e) {
    if (e instanceof KubeLibError) return e;
    throw e;
  }
  throw new Error('expected a KubeLibError');
}

function hasDirective(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasDirective);
  if (v && typeof v === 'object') {
    return Object.entries(v).some(([k, x]) => k.startsWith('$') || hasDirective(x));
  }
  return false;
}

t.test('schemas exist for every built-in kind the server serves', async (t) => {
  const expected = [
    '/v1/Pod',
    '/v1/Service',
    '/v1/Endpoints',
    '/v1/ConfigMap',
    '/v1/Secret',
    '/v1/Node',
    '/v1/Event',
    '/v1/ServiceAccount',
    '/v1/PersistentVolume',
    '/v1/PersistentVolumeClaim',
    '/v1/Namespace',
    'apps/v1/Deployment',
    'apps/v1/ReplicaSet',
    'apps/v1/StatefulSet',
    'apps/v1/DaemonSet',
    'coordination.k8s.io/v1/Lease',
    'policy/v1/PodDisruptionBudget',
    'rbac.authorization.k8s.io/v1/Role',
    'rbac.authorization.k8s.io/v1/ClusterRole',
    'rbac.authorization.k8s.io/v1/RoleBinding',
    'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
  ];
  t.same(
    smpKinds()
      .map((k) => `${k.group}/${k.version}/${k.kind}`)
      .sort(),
    [...expected].sort(),
  );
  t.equal(smpSchemaFor('example.com', 'v1', 'Widget'), undefined, 'custom kinds have none');
});

t.test(
  "kubectl apply: one container's image changes (the first patch kubectl sends)",
  async (t) => {
    const live = deployment({
      containers: [
        { name: 'nginx', image: 'nginx:1.26', ports: [{ containerPort: 80 }] },
        { name: 'sidecar', image: 'busybox', args: ['sleep', '1d'] },
      ],
    });
    const patch = {
      metadata: { annotations: { [LAST_APPLIED]: '{"new":1}\n' } },
      spec: {
        template: {
          spec: {
            '$setElementOrder/containers': [{ name: 'nginx' }, { name: 'sidecar' }],
            containers: [{ image: 'nginx:1.27', name: 'nginx' }],
          },
        },
      },
    };
    const out = strategicMerge(live, patch, deploymentSchema);
    const expected = cloneJson(live) as Doc;
    expected.metadata.annotations = { [LAST_APPLIED]: '{"new":1}\n' };
    expected.spec.template.spec.containers[0].image = 'nginx:1.27';
    t.same(out, expected);
    t.notOk(hasDirective(out), 'no directive is stored');
    t.equal((live as Doc).spec.template.spec.containers[0].image, 'nginx:1.26', 'input untouched');
  },
);

t.test('kubectl apply: remove a container and the labels, add env and a port', async (t) => {
  const live = deployment(
    {
      containers: [
        {
          name: 'nginx',
          image: 'nginx',
          ports: [{ containerPort: 80 }],
          env: [{ name: 'B', value: '2' }],
        },
        { name: 'sidecar', image: 'busybox' },
      ],
    },
    { labels: { app: 'web', tier: 'fe' } },
  );
  const patch = {
    metadata: { annotations: { [LAST_APPLIED]: 'x' }, labels: null },
    spec: {
      replicas: 3,
      template: {
        spec: {
          '$setElementOrder/containers': [{ name: 'nginx' }],
          containers: [
            {
              name: 'nginx',
              env: [{ name: 'A', value: '1' }],
              '$setElementOrder/ports': [{ containerPort: 80 }, { containerPort: 443 }],
              ports: [{ containerPort: 443 }],
            },
            { $patch: 'delete', name: 'sidecar' },
          ],
        },
      },
    },
  };
  const out = strategicMerge(live, patch, deploymentSchema) as Doc;
  t.equal(out.metadata.labels, undefined, 'labels: null removes them');
  t.equal(out.spec.replicas, 3);
  t.same(out.spec.template.spec.containers, [
    {
      name: 'nginx',
      image: 'nginx',
      ports: [{ containerPort: 80 }, { containerPort: 443 }],
      // A patch element the server does not have goes before server-only ones (Kubernetes'
      // mergeSortedSlice); kubectl sends $setElementOrder when the order matters.
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: '2' },
      ],
    },
  ]);
  t.notOk(hasDirective(out));
});

t.test(
  'kubectl apply: finalizer, strategy, volume source, atomic and keyed sub-lists',
  async (t) => {
    const live = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'web',
        finalizers: ['example.com/a', 'example.com/b'],
        annotations: { [LAST_APPLIED]: 'old' },
      },
      spec: {
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        template: {
          spec: {
            containers: [
              {
                name: 'c',
                image: 'img',
                args: ['a', 'b'],
                volumeMounts: [
                  { mountPath: '/a', name: 'v1' },
                  { mountPath: '/b', name: 'v2' },
                ],
              },
            ],
            volumes: [
              { name: 'v1', emptyDir: {} },
              { name: 'v2', emptyDir: {} },
            ],
          },
        },
      },
    };
    const patch = {
      metadata: {
        '$deleteFromPrimitiveList/finalizers': ['example.com/b'],
        '$setElementOrder/finalizers': ['example.com/a'],
        annotations: { [LAST_APPLIED]: 'new' },
      },
      spec: {
        strategy: { $retainKeys: ['type'], rollingUpdate: null, type: 'Recreate' },
        template: {
          spec: {
            '$setElementOrder/containers': [{ name: 'c' }],
            '$setElementOrder/volumes': [{ name: 'v1' }],
            containers: [
              {
                name: 'c',
                args: ['a'],
                '$setElementOrder/volumeMounts': [{ mountPath: '/b' }],
                volumeMounts: [
                  { mountPath: '/b', name: 'v1' },
                  { $patch: 'delete', mountPath: '/a' },
                ],
              },
            ],
            volumes: [
              {
                $retainKeys: ['configMap', 'name'],
                configMap: { name: 'cm' },
                emptyDir: null,
                name: 'v1',
              },
            ],
          },
        },
      },
    };
    const out = strategicMerge(live, patch, deploymentSchema) as Doc;
    t.same(out.metadata.finalizers, ['example.com/a']);
    t.same(out.metadata.annotations, { [LAST_APPLIED]: 'new' });
    t.same(out.spec.strategy, { type: 'Recreate' });
    t.same(out.spec.template.spec.containers, [
      { name: 'c', image: 'img', args: ['a'], volumeMounts: [{ mountPath: '/b', name: 'v1' }] },
    ]);
    t.same(
      out.spec.template.spec.volumes,
      [
        { name: 'v1', configMap: { name: 'cm' } },
        { name: 'v2', emptyDir: {} },
      ],
      'the old source is dropped by $retainKeys; v2 is server-only and stays',
    );
    t.notOk(hasDirective(out));
  },
);

t.test('kubectl set image and rollout restart patches', async (t) => {
  const live = deployment({ containers: [{ name: 'nginx', image: 'nginx:1' }] });
  const setImage = strategicMerge(
    live,
    { spec: { template: { spec: { containers: [{ name: 'nginx', image: 'nginx:2' }] } } } },
    deploymentSchema,
  ) as Doc;
  t.same(setImage.spec.template.spec.containers, [{ name: 'nginx', image: 'nginx:2' }]);
  const restart = strategicMerge(
    live,
    {
      spec: {
        template: {
          metadata: {
            annotations: { 'kubectl.kubernetes.io/restartedAt': '2025-01-01T00:00:00Z' },
          },
        },
      },
    },
    deploymentSchema,
  ) as Doc;
  t.same(restart.spec.template.metadata, {
    labels: { app: 'web' },
    annotations: { 'kubectl.kubernetes.io/restartedAt': '2025-01-01T00:00:00Z' },
  });
});

t.test(
  'keyed lists of other kinds: service ports, conditions, owner references, node addresses',
  async (t) => {
    const svc = {
      metadata: { name: 's' },
      spec: {
        ports: [
          { port: 80, targetPort: 8080 },
          { port: 443, targetPort: 8443 },
        ],
      },
    };
    const svcOut = strategicMerge(
      svc,
      { spec: { ports: [{ port: 443, targetPort: 9443 }, { port: 8080 }] } },
      smpSchemaFor('', 'v1', 'Service'),
    ) as Doc;
    t.same(
      svcOut.spec.ports,
      [{ port: 80, targetPort: 8080 }, { port: 443, targetPort: 9443 }, { port: 8080 }],
      'merged by port; server-only elements keep their place before patch elements that followed them',
    );

    const pod = {
      metadata: {
        name: 'p',
        ownerReferences: [{ uid: 'u1', kind: 'ReplicaSet', name: 'rs' }],
      },
      status: {
        conditions: [
          { type: 'Ready', status: 'False' },
          { type: 'Initialized', status: 'True' },
        ],
        containerStatuses: [{ name: 'c', ready: false }],
      },
    };
    const podOut = strategicMerge(
      pod,
      {
        metadata: { ownerReferences: [{ uid: 'u2', kind: 'Job', name: 'j' }] },
        status: {
          conditions: [{ type: 'Ready', status: 'True' }],
          containerStatuses: [{ name: 'd', ready: true }],
        },
      },
      podSchema,
    ) as Doc;
    t.same(
      podOut.metadata.ownerReferences.map((r: Doc) => r.uid),
      ['u2', 'u1'],
      'new elements first',
    );
    t.same(podOut.status.conditions, [
      { type: 'Ready', status: 'True' },
      { type: 'Initialized', status: 'True' },
    ]);
    t.same(
      podOut.status.containerStatuses,
      [{ name: 'd', ready: true }],
      'containerStatuses is atomic',
    );

    const node = {
      metadata: { name: 'n' },
      spec: { podCIDRs: ['10.0.0.0/24'] },
      status: { addresses: [{ type: 'InternalIP', address: '1.1.1.1' }] },
    };
    const nodeOut = strategicMerge(
      node,
      {
        spec: { podCIDRs: ['10.0.1.0/24', '10.0.0.0/24'] },
        status: { addresses: [{ type: 'Hostname', address: 'n' }] },
      },
      smpSchemaFor('', 'v1', 'Node'),
    ) as Doc;
    t.same(nodeOut.spec.podCIDRs, ['10.0.1.0/24', '10.0.0.0/24'], 'a scalar set, in patch order');
    t.same(
      nodeOut.status.addresses.map((a: Doc) => a.type),
      ['Hostname', 'InternalIP'],
    );
  },
);

t.test('atomic lists and maps are replaced; tolerations and PDB selectors', async (t) => {
  const pod = {
    metadata: { name: 'p' },
    spec: {
      containers: [{ name: 'c', image: 'i', command: ['a', 'b'] }],
      tolerations: [{ key: 'a', operator: 'Exists' }],
    },
  };
  const out = strategicMerge(
    pod,
    {
      spec: {
        tolerations: [{ key: 'b', operator: 'Exists' }],
        containers: [{ name: 'c', command: ['z'] }],
      },
    },
    podSchema,
  ) as Doc;
  t.same(out.spec.tolerations, [{ key: 'b', operator: 'Exists' }]);
  t.same(out.spec.containers[0].command, ['z']);
  const pdb = { metadata: { name: 'p' }, spec: { selector: { matchLabels: { a: '1', b: '2' } } } };
  const pdbOut = strategicMerge(
    pdb,
    { spec: { selector: { matchLabels: { c: '3' } } } },
    smpSchemaFor('policy', 'v1', 'PodDisruptionBudget'),
  ) as Doc;
  t.same(pdbOut.spec.selector, { matchLabels: { c: '3' } }, 'patchStrategy replace');
});

t.test('$patch directives on maps and lists', async (t) => {
  const live = deployment({
    containers: [
      { name: 'a', image: 'x' },
      { name: 'b', image: 'y' },
    ],
    nodeSelector: { disk: 'ssd', zone: 'a' },
  });
  const replaceList = strategicMerge(
    live,
    {
      spec: {
        template: { spec: { containers: [{ name: 'c', image: 'z' }, { $patch: 'replace' }] } },
      },
    },
    deploymentSchema,
  ) as Doc;
  t.same(replaceList.spec.template.spec.containers, [{ name: 'c', image: 'z' }]);
  const replaceMap = strategicMerge(
    live,
    { spec: { template: { spec: { nodeSelector: { $patch: 'replace', zone: 'b' } } } } },
    deploymentSchema,
  ) as Doc;
  t.same(replaceMap.spec.template.spec.nodeSelector, { zone: 'b' });
  const deleteMap = strategicMerge(
    live,
    { spec: { template: { spec: { nodeSelector: { $patch: 'delete' } } } } },
    deploymentSchema,
  ) as Doc;
  t.equal(deleteMap.spec.template.spec.nodeSelector, undefined);
  const deleteAbsent = strategicMerge(
    live,
    { spec: { template: { spec: { containers: [{ $patch: 'delete', name: 'nope' }] } } } },
    deploymentSchema,
  ) as Doc;
  t.same(
    deleteAbsent.spec.template.spec.containers.map((c: Doc) => c.name),
    ['a', 'b'],
    'deleting an absent element is fine',
  );
  t.same(strategicMerge({ a: 1 }, { $patch: 'replace', b: 2 }, undefined), { b: 2 });
  t.same(strategicMerge({ a: 1 }, { $patch: 'delete' }, undefined), {});
});

t.test('new fields from a patch are stored without directives or nulls', async (t) => {
  const out = strategicMerge(
    { metadata: { name: 'p' } },
    {
      spec: {
        '$setElementOrder/containers': [{ name: 'c' }],
        containers: [
          {
            name: 'c',
            '$setElementOrder/env': [{ name: 'A' }],
            env: [{ name: 'A', value: '1', valueFrom: null }],
          },
          { $patch: 'delete', name: 'gone' },
        ],
        volumes: [{ name: 'v', $retainKeys: ['name', 'emptyDir'], emptyDir: {} }],
        tolerations: [{ key: 'k', value: null }],
      },
    },
    podSchema,
  );
  t.same(out, {
    metadata: { name: 'p' },
    spec: {
      containers: [{ name: 'c', env: [{ name: 'A', value: '1' }] }],
      volumes: [{ name: 'v', emptyDir: {} }],
      tolerations: [{ key: 'k' }],
    },
  });
});

t.test('malformed patches are 400 or 422 and change nothing', async (t) => {
  const live = deployment({ containers: [{ name: 'a', image: 'x' }] });
  const before = cloneJson(live);
  const cases: [unknown, number][] = [
    [{ spec: { strategy: { $retainKeys: 'type' } } }, 400],
    [{ spec: { strategy: { $retainKeys: ['type'], rollingUpdate: {} } } }, 400],
    [{ metadata: { $deleteFromPrimitiveList: ['a'] } }, 400],
    [{ spec: { template: { spec: { $setElementOrder: [] } } } }, 400],
    [{ spec: { template: { spec: { containers: [{ image: 'no-name' }] } } } }, 422],
    [{ spec: { template: { spec: { containers: [{ $patch: 'delete' }] } } } }, 422],
    [{ spec: { template: { spec: { containers: [{ $patch: 'merge', name: 'a' }] } } } }, 422],
    [{ spec: { template: { spec: { containers: [{ $patch: 'frob', name: 'a' }] } } } }, 422],
    [{ spec: { $patch: 'frob' } }, 422],
    [{ spec: { template: { spec: { containers: [['a']] } } } }, 422],
    [{ spec: { template: { spec: { containers: ['a'] } } } }, 422],
    [
      {
        spec: {
          template: {
            spec: {
              '$setElementOrder/containers': [{ name: 'b' }, { name: 'a' }],
              containers: [{ name: 'a' }, { name: 'b' }],
            },
          },
        },
      },
      422,
    ],
  ];
  for (const [patch, code] of cases) {
    const e = libError(() => strategicMerge(live, patch as JsonMap, deploymentSchema));
    t.equal(e.httpCode, code, JSON.stringify(patch));
  }
  t.same(live, before);
  t.equal(
    libError(() => strategicMerge(live, [] as unknown as JsonMap, deploymentSchema)).httpCode,
    400,
  );
});

// --- properties ------------------------------------------------------------------------------------

/** JSON without `$` keys and without nulls inside arrays (where SMP and RFC 7386 differ). */
const plainJson: fc.Arbitrary<JsonValue> = fc.letrec<{ v: JsonValue; obj: JsonValue }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom<JsonValue>(null, true, 1, 'a', 'b'),
    fc.array(fc.constantFrom<JsonValue>(1, 'x', true), { maxLength: 3 }),
    tie('obj'),
  ),
  obj: fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), tie('v'), { maxKeys: 3 }),
})).obj;

t.test('property: without a schema or directives, SMP is JSON merge patch', async (t) => {
  fc.assert(
    fc.property(plainJson, plainJson, (o, p) => {
      const smp = strategicMerge(o as JsonMap, p as JsonMap, undefined);
      t.same(smp, applyMergePatch(o, p));
      return true;
    }),
    { numRuns: 400 },
  );
});

t.test(
  'property: keyed lists merge by key, keep server-only elements, and are idempotent',
  async (t) => {
    const element = fc.record({
      name: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
      image: fc.constantFrom('1', '2', '3'),
    });
    const list = fc.uniqueArray(element, { selector: (e) => e.name, maxLength: 5 });
    fc.assert(
      fc.property(list, list, (live, patch) => {
        const original = { metadata: { name: 'p' }, spec: { containers: live } };
        const p = { spec: { containers: patch } };
        const once = strategicMerge(original, p, podSchema) as Doc;
        const names = once.spec.containers.map((c: Doc) => c.name);
        const expected = new Map(live.map((c) => [c.name, c.image]));
        for (const c of patch) expected.set(c.name, c.image);
        t.same(new Set(names), new Set(expected.keys()));
        t.equal(names.length, expected.size, 'no duplicates');
        for (const c of once.spec.containers) t.equal(c.image, expected.get(c.name));
        const patchNames: string[] = patch.map((c) => c.name);
        t.same(
          names.filter((n: string) => patchNames.includes(n)),
          patchNames,
          'patch elements keep the patch order',
        );
        t.same(strategicMerge(once, p, podSchema), once, 'idempotent');
        return true;
      }),
      { numRuns: 200 },
    );
  },
);

t.test(
  'property: $setElementOrder yields exactly the requested order for the listed elements',
  async (t) => {
    const names = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 6 });
    fc.assert(
      fc.property(
        names,
        fc.shuffledSubarray(['a', 'b', 'c', 'd', 'e', 'f']),
        (liveNames, order) => {
          const original = { spec: { containers: liveNames.map((name) => ({ name })) } };
          const patch = {
            spec: {
              '$setElementOrder/containers': order.map((name) => ({ name })),
              containers: order.map((name) => ({ name, image: 'x' })),
            },
          };
          const out = strategicMerge(original, patch, podSchema) as Doc;
          const got: string[] = out.spec.containers.map((c: Doc) => c.name);
          t.same(
            got.filter((n) => order.includes(n)),
            order,
          );
          t.same(
            got.filter((n) => !order.includes(n)),
            liveNames.filter((n) => !order.includes(n)),
            'server-only elements keep their relative order',
          );
          t.notOk(hasDirective(out));
          return true;
        },
      ),
      { numRuns: 200 },
    );
  },
);
