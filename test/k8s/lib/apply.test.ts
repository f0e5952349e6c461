import fc from 'fast-check';
import t from 'tap';
import {
  type ApplyOptions,
  managedFieldsOf,
  recordUpdate,
  serverSideApply,
} from '../../../src/k8s/apply.js';
import { KubeLibError } from '../../../src/k8s/errors.js';
import { fieldErrorString } from '../../../src/k8s/field-errors.js';
import { FieldSet, fieldSetOf } from '../../../src/k8s/field-set.js';
import { cloneJson, type JsonMap } from '../../../src/k8s/json.js';
import { validateCreateOptions, validatePatchOptions } from '../../../src/k8s/options.js';
import { compileCrdSchema } from '../../../src/k8s/schema.js';
import { smpSchemaFor } from '../../../src/k8s/smp-schemas.js';

// biome-ignore lint/suspicious/noExplicitAny: test documents are navigated by property chains
type Doc = any;

const NOW = new Date('2025-01-02T03:04:05.678Z');
const deploymentSchema = smpSchemaFor('apps', 'v1', 'Deployment');
const opts = (manager: string, extra: Partial<ApplyOptions> = {}): ApplyOptions => ({
  manager,
  apiVersion: 'apps/v1',
  schema: deploymentSchema,
  now: NOW,
  ...extra,
});

function deployment(
  image: string,
  extra: { labels?: Record<string, string>; env?: JsonMap[]; replicas?: number } = {},
): JsonMap {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'default',
      ...(extra.labels ? { labels: extra.labels } : {}),
    },
    spec: {
      ...(extra.replicas !== undefined ? { replicas: extra.replicas } : {}),
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'nginx', image, ...(extra.env ? { env: extra.env } : {}) }] },
      },
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

t.test('apply creates an object owned by its manager', async (t) => {
  const applied = deployment('nginx:1', { labels: { app: 'web' }, replicas: 2 });
  const { object, created } = serverSideApply(undefined, applied, opts('kubectl'));
  t.ok(created);
  const o = object as Doc;
  t.equal(o.spec.template.spec.containers[0].image, 'nginx:1');
  t.same(o.metadata.managedFields, [
    {
      manager: 'kubectl',
      operation: 'Apply',
      apiVersion: 'apps/v1',
      time: '2025-01-02T03:04:05Z',
      fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:metadata': { 'f:labels': { 'f:app': {} } },
        'f:spec': {
          'f:replicas': {},
          'f:selector': { 'f:matchLabels': { 'f:app': {} } },
          'f:template': {
            'f:metadata': { 'f:labels': { 'f:app': {} } },
            'f:spec': {
              'f:containers': { 'k:{"name":"nginx"}': { '.': {}, 'f:image': {}, 'f:name': {} } },
            },
          },
        },
      },
    },
  ]);
  t.notOk('managedFields' in (applied.metadata as JsonMap), 'the input is not modified');
});

t.test(
  'applying again changes the image and removes what the manager stopped applying',
  async (t) => {
    const first = serverSideApply(
      undefined,
      deployment('nginx:1', {
        labels: { app: 'web', tier: 'fe' },
        env: [
          { name: 'A', value: '1' },
          { name: 'B', value: '2' },
        ],
      }),
      opts('kubectl'),
    ).object;
    const second = serverSideApply(
      first,
      deployment('nginx:2', { labels: { app: 'web' }, env: [{ name: 'A', value: '1' }] }),
      opts('kubectl'),
    );
    t.notOk(second.created);
    const o = second.object as Doc;
    t.equal(o.spec.template.spec.containers[0].image, 'nginx:2');
    t.same(o.metadata.labels, { app: 'web' }, 'the dropped label is removed');
    t.same(
      o.spec.template.spec.containers[0].env,
      [{ name: 'A', value: '1' }],
      'the dropped env entry is removed',
    );
    t.equal(o.metadata.managedFields.length, 1);
    const third = serverSideApply(second.object, deployment('nginx:2'), opts('kubectl'))
      .object as Doc;
    t.equal(third.metadata.labels, undefined, 'labels left empty by removal go away');
    t.equal(third.spec.template.spec.containers[0].env, undefined);
  },
);

t.test(
  'another manager never removes fields it does not mention (kubectl-last-applied)',
  async (t) => {
    const base = serverSideApply(
      undefined,
      deployment('nginx:1', { replicas: 2 }),
      opts('kubectl'),
    ).object;
    const annotated = serverSideApply(
      base,
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {
          name: 'web',
          namespace: 'default',
          annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
        },
      },
      opts('kubectl-last-applied'),
    ).object as Doc;
    t.equal(annotated.spec.replicas, 2);
    t.equal(annotated.spec.template.spec.containers[0].image, 'nginx:1');
    t.same(
      annotated.metadata.managedFields.map((e: Doc) => e.manager),
      ['kubectl', 'kubectl-last-applied'],
    );
    const again = serverSideApply(
      annotated,
      deployment('nginx:1', { replicas: 2 }),
      opts('kubectl'),
    ).object as Doc;
    t.same(
      again.metadata.annotations,
      { 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
      'kept: owned by the other manager',
    );
  },
);

t.test(
  'conflicts: 409 with FieldManagerConflict causes; force takes the field; equal values are shared',
  async (t) => {
    const a = serverSideApply(undefined, deployment('nginx:1', { replicas: 3 }), opts('a')).object;
    const e = libError(() => serverSideApply(a, deployment('nginx:1', { replicas: 5 }), opts('b')));
    t.equal(e.httpCode, 409);
    t.equal(e.reason, 'Conflict');
    t.equal(e.statusMessage, 'Apply failed with 1 conflict: conflict with "a": .spec.replicas');
    t.same(e.causes, [
      { reason: 'FieldManagerConflict', message: 'conflict with "a"', field: '.spec.replicas' },
    ]);

    const two = libError(() =>
      serverSideApply(a, deployment('nginx:2', { replicas: 5 }), opts('b')),
    );
    t.equal(
      two.statusMessage,
      'Apply failed with 2 conflicts: conflicts with "a":\n- .spec.replicas\n- .spec.template.spec.containers[name="nginx"].image',
    );

    const forced = serverSideApply(
      a,
      deployment('nginx:1', { replicas: 5 }),
      opts('b', { force: true }),
    ).object as Doc;
    t.equal(forced.spec.replicas, 5);
    const owners = Object.fromEntries(
      managedFieldsOf(forced).map((m) => [
        m.manager,
        FieldSet.fromFieldsV1(m.fieldsV1).has(['f:spec', 'f:replicas']),
      ]),
    );
    t.same(owners, { a: false, b: true }, 'force moves ownership');

    const shared = serverSideApply(a, deployment('nginx:1', { replicas: 3 }), opts('b'))
      .object as Doc;
    const sharedOwners = managedFieldsOf(shared).filter((m) =>
      FieldSet.fromFieldsV1(m.fieldsV1).has(['f:spec', 'f:replicas']),
    );
    t.same(
      sharedOwners.map((m) => m.manager),
      ['a', 'b'],
      'same value: both own it',
    );
    const dropped = serverSideApply(shared, deployment('nginx:1'), opts('b')).object as Doc;
    t.equal(dropped.spec.replicas, 3, 'a field dropped by one of two owners stays');
  },
);

t.test('updates are recorded and conflict with appliers as Kubernetes reports them', async (t) => {
  const created = recordUpdate(undefined, deployment('nginx:1', { replicas: 1 }), {
    manager: 'kubectl-client-side-apply',
    apiVersion: 'apps/v1',
    schema: deploymentSchema,
    now: NOW,
  });
  const [entry] = managedFieldsOf(created);
  t.equal(entry?.operation, 'Update');
  t.ok(FieldSet.fromFieldsV1(entry?.fieldsV1).has(['f:spec', 'f:replicas']));
  const e = libError(() =>
    serverSideApply(created, deployment('nginx:1', { replicas: 4 }), opts('kubectl')),
  );
  t.equal(
    e.statusMessage,
    'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas',
  );
  const scaled = cloneJson(created) as Doc;
  scaled.spec.replicas = 7;
  const afterScale = recordUpdate(created, scaled, {
    manager: 'kubectl-scale',
    apiVersion: 'apps/v1',
    schema: deploymentSchema,
    now: NOW,
  });
  const byManager = new Map(
    managedFieldsOf(afterScale).map((m) => [m.manager, FieldSet.fromFieldsV1(m.fieldsV1)]),
  );
  t.ok(byManager.get('kubectl-scale')?.has(['f:spec', 'f:replicas']));
  t.notOk(
    byManager.get('kubectl-client-side-apply')?.has(['f:spec', 'f:replicas']),
    'an update takes the field',
  );
  t.ok(
    byManager
      .get('kubectl-client-side-apply')
      ?.has(['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"nginx"}', 'f:image']),
  );
  const unchanged = recordUpdate(afterScale, cloneJson(afterScale), {
    manager: 'noop',
    apiVersion: 'apps/v1',
    schema: deploymentSchema,
  });
  t.same(
    managedFieldsOf(unchanged).map((m) => m.manager),
    ['kubectl-client-side-apply', 'kubectl-scale'],
    'no change, no entry',
  );
});

t.test('bad applied configurations', async (t) => {
  t.equal(
    libError(() =>
      serverSideApply(undefined, { metadata: { name: 'x', managedFields: [] } }, opts('m')),
    ).statusMessage,
    'metadata.managedFields must be nil',
  );
  const e = libError(() =>
    serverSideApply(
      undefined,
      { spec: { template: { spec: { containers: [{ image: 'x' }] } } } },
      opts('m'),
    ),
  );
  t.equal(e.httpCode, 422, 'keyed elements need their key');
  t.equal(libError(() => serverSideApply(undefined, [], opts('m'))).httpCode, 400);
});

t.test('reset fields (status) are neither applied nor owned', async (t) => {
  const out = serverSideApply(
    undefined,
    { ...deployment('x'), status: { replicas: 9 } },
    opts('m', { resetFields: ['status'] }),
  ).object as Doc;
  t.equal(out.status, undefined);
  t.notOk(FieldSet.fromFieldsV1(out.metadata.managedFields[0].fieldsV1).hasOrBelow(['f:status']));
});

t.test(
  'CRD merge metadata: map lists merge by key, sets union, atomic lists replace',
  async (t) => {
    const schema = compileCrdSchema({
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            ports: {
              type: 'array',
              'x-kubernetes-list-type': 'map',
              'x-kubernetes-list-map-keys': ['port', 'protocol'],
              items: {
                type: 'object',
                properties: {
                  port: { type: 'integer' },
                  protocol: { type: 'string' },
                  name: { type: 'string' },
                },
              },
            },
            tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
            args: { type: 'array', items: { type: 'string' } },
          },
        },
      },
    }).mergeSchema;
    const w = (spec: JsonMap): JsonMap => ({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'w' },
      spec,
    });
    const first = serverSideApply(
      undefined,
      w({ ports: [{ port: 80, protocol: 'TCP', name: 'http' }], tags: ['a'], args: ['x', 'y'] }),
      { manager: 'a', apiVersion: 'example.com/v1', schema, now: NOW },
    ).object;
    const second = serverSideApply(
      first,
      w({ ports: [{ port: 80, protocol: 'UDP' }], tags: ['b'] }),
      { manager: 'b', apiVersion: 'example.com/v1', schema, now: NOW },
    );
    const spec = (second.object as Doc).spec;
    t.same(spec.ports, [
      { port: 80, protocol: 'TCP', name: 'http' },
      { port: 80, protocol: 'UDP' },
    ]);
    t.same(spec.tags, ['a', 'b']);
    t.same(spec.args, ['x', 'y']);
    const conflict = libError(() =>
      serverSideApply(second.object, w({ args: ['q'] }), {
        manager: 'c',
        apiVersion: 'example.com/v1',
        schema,
        now: NOW,
      }),
    );
    t.equal(conflict.causes[0]?.field, '.spec.args', 'an atomic list is one field');
    const set = fieldSetOf(w({ ports: [{ port: 1, protocol: 'TCP' }], tags: ['x'] }), schema);
    t.ok(set.has(['f:spec', 'f:ports', 'k:{"port":1,"protocol":"TCP"}']));
    t.ok(set.has(['f:spec', 'f:tags', 'v:"x"']));
  },
);

t.test('write options are checked as kube-apiserver does', async (t) => {
  const noManager = libError(() => validatePatchOptions('apply', {}));
  t.equal(noManager.httpCode, 422);
  t.equal(
    noManager.statusMessage,
    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
  );
  t.equal(
    libError(() => validatePatchOptions('merge', { force: 'true' })).statusMessage,
    'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
  );
  t.equal(
    libError(() => validateCreateOptions({ dryRun: ['Some'] })).statusMessage,
    'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All"',
  );
  t.match(
    libError(() => validateCreateOptions({ fieldValidation: 'Loud' })).causes.map(
      (c) => c.message,
    )[0],
    /^Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"$/,
  );
  t.match(
    fieldErrorString({
      type: 'FieldValueInvalid',
      field: 'fieldManager',
      badValue: 'a\u0001',
      detail: 'x',
    }),
    /^fieldManager: Invalid value: "a\\x01": x$/,
  );
  t.doesNotThrow(() =>
    validatePatchOptions('apply', {
      fieldManager: 'kubectl',
      force: 'false',
      dryRun: ['All'],
      fieldValidation: 'Strict',
    }),
  );
  t.equal(libError(() => validatePatchOptions('json', { fieldManager: 'a\u0001' })).httpCode, 422);
});

// --- properties --------------------------------------------------------------------------------

const envArb = fc.uniqueArray(
  fc.record({ name: fc.constantFrom('A', 'B', 'C', 'D'), value: fc.constantFrom('1', '2') }),
  { selector: (e) => e.name, maxLength: 4 },
);
const labelsArb = fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.constantFrom('x', 'y'), {
  maxKeys: 3,
});
const configArb = fc.record({
  image: fc.constantFrom('i:1', 'i:2'),
  labels: labelsArb,
  env: envArb,
  replicas: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
});

function configOf(c: {
  image: string;
  labels: Record<string, string>;
  env: JsonMap[];
  replicas: number | undefined;
}): JsonMap {
  return deployment(c.image, {
    ...(Object.keys(c.labels).length > 0 ? { labels: c.labels } : {}),
    ...(c.env.length > 0 ? { env: c.env } : {}),
    ...(c.replicas !== undefined ? { replicas: c.replicas } : {}),
  });
}

t.test(
  'property: with one manager, the object after any apply sequence equals a fresh apply of the last',
  async (t) => {
    fc.assert(
      fc.property(fc.array(configArb, { minLength: 1, maxLength: 4 }), (configs) => {
        let live: JsonMap | undefined;
        for (const c of configs) live = serverSideApply(live, configOf(c), opts('m')).object;
        const fresh = serverSideApply(
          undefined,
          configOf(configs[configs.length - 1] as (typeof configs)[number]),
          opts('m'),
        ).object;
        const strip = (o: Doc) => {
          const copy = cloneJson(o) as Doc;
          copy.spec.template.spec.containers[0].env?.sort((x: Doc, y: Doc) =>
            x.name < y.name ? -1 : 1,
          );
          return copy;
        };
        t.same(strip(live), strip(fresh));
        return true;
      }),
      { numRuns: 150 },
    );
  },
);

t.test('property: FieldsV1 encoding round-trips', async (t) => {
  fc.assert(
    fc.property(configArb, (c) => {
      const set = fieldSetOf(configOf(c), deploymentSchema);
      const back = FieldSet.fromFieldsV1(set.toFieldsV1());
      t.equal(back.size, set.size);
      for (const p of set) t.ok(back.has(p));
      return true;
    }),
    { numRuns: 100 },
  );
});
