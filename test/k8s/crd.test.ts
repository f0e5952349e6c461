/**
 * CustomResourceDefinitions: a stored CRD is Established and its resource is served at once
 * (discovery, OpenAPI, verbs), objects are pruned, defaulted and validated against its schema,
 * invalid CRDs are refused, and deleting a CRD takes its objects with it.
 */
import t, { type Test } from 'tap';
import { call, type KubeServer, startKube } from './harness.js';
import { openWatch, summary } from './watch-client.js';

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';
const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

function widgetCrd(overrides: Record<string, unknown> = {}) {
  const schema = {
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: {
          size: { type: 'integer', minimum: 1 },
          color: { type: 'string', default: 'blue' },
        },
        required: ['size'],
      },
      status: { type: 'object', properties: { ready: { type: 'boolean' } } },
    },
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', shortNames: ['wd'] },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: schema },
          subresources: { status: {} },
          additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }],
        },
        { name: 'v2', served: true, storage: false, schema: { openAPIV3Schema: schema } },
      ],
      ...overrides,
    },
  };
}

async function withCrd(t: Test): Promise<KubeServer> {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  const c = await call(s.url, 'POST', CRDS, widgetCrd());
  if (c.status !== 201) throw new Error(c.text);
  return s;
}

const widget = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name },
  spec,
});

t.test('a stored CRD is Established and served at once', async (t) => {
  const s = await withCrd(t);
  const crd = await call(s.url, 'GET', `${CRDS}/widgets.example.com`);
  const conds = crd.body.status.conditions.map(
    (c: { type: string; status: string }) => `${c.type}=${c.status}`,
  );
  t.same(conds, ['NamesAccepted=True', 'Established=True']);
  t.same(crd.body.status.storedVersions, ['v1']);
  t.equal(crd.body.status.acceptedNames.kind, 'Widget');
  const apis = await call(s.url, 'GET', '/apis', undefined, { accept: AGG });
  const group = apis.body.items.find(
    (i: { metadata: { name: string } }) => i.metadata.name === 'example.com',
  );
  t.same(
    group.versions.map((v: { version: string }) => v.version),
    ['v2', 'v1'],
    'preferred first',
  );
  const res = group.versions[1].resources[0];
  t.match(res, {
    resource: 'widgets',
    scope: 'Namespaced',
    responseKind: { kind: 'Widget' },
    shortNames: ['wd'],
  });
  t.same(
    res.subresources.map((x: { subresource: string }) => x.subresource),
    ['status'],
  );
  const legacy = await call(s.url, 'GET', '/apis/example.com/v1');
  t.same(
    legacy.body.resources.map((r: { name: string }) => r.name),
    ['widgets', 'widgets/status'],
  );
  const root = await call(s.url, 'GET', '/openapi/v3');
  const doc = await call(s.url, 'GET', root.body.paths['apis/example.com/v1'].serverRelativeURL);
  const patch = doc.body.paths['/apis/example.com/v1/namespaces/{namespace}/widgets/{name}'].patch;
  t.same(patch['x-kubernetes-group-version-kind'], {
    group: 'example.com',
    version: 'v1',
    kind: 'Widget',
  });
  t.ok(doc.body.components.schemas['com.example.v1.Widget'], 'the schema is published');
});

t.test('objects are pruned, defaulted and validated against the schema', async (t) => {
  const s = await withCrd(t);
  const c = await call(s.url, 'POST', WIDGETS, widget('w1', { size: 3 }));
  t.equal(c.status, 201);
  t.equal(c.body.spec.color, 'blue', 'default applied');
  t.equal(c.body.metadata.generation, 1);
  const bad = await call(s.url, 'POST', WIDGETS, widget('w2', { size: 'big' }));
  t.equal(bad.status, 422);
  t.equal(bad.body.details.kind, 'Widget');
  t.equal(bad.body.details.causes[0].field, 'spec.size');
  t.match(
    bad.body.message,
    /^Widget\.example\.com "w2" is invalid: spec\.size: Invalid value: "string"/,
  );
  const missing = await call(s.url, 'POST', WIDGETS, widget('w3', {}));
  t.equal(missing.status, 422);
  t.equal(missing.body.details.causes[0].reason, 'FieldValueRequired');
  const strict = await call(
    s.url,
    'POST',
    `${WIDGETS}?fieldValidation=Strict`,
    widget('w4', { size: 1, bogus: 1 }),
  );
  t.equal(strict.status, 400);
  t.equal(
    strict.body.message,
    'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus"',
  );
  const warn = await call(s.url, 'POST', WIDGETS, widget('w5', { size: 1, bogus: 1 }));
  t.equal(warn.status, 201);
  t.equal(warn.body.spec.bogus, undefined, 'pruned');
  t.match(warn.headers.get('warning'), /unknown field \\"spec\.bogus\\"/);
  const smp = await call(
    s.url,
    'PATCH',
    `${WIDGETS}/w1`,
    { spec: { size: 2 } },
    {
      'content-type': 'application/strategic-merge-patch+json',
    },
  );
  t.equal(smp.status, 415, 'no strategic merge patch for custom kinds');
  const merge = await call(
    s.url,
    'PATCH',
    `${WIDGETS}/w1`,
    { spec: { size: 2 } },
    {
      'content-type': 'application/merge-patch+json',
    },
  );
  t.equal(merge.body.metadata.generation, 2, 'spec change bumps generation');
  const st = await call(
    s.url,
    'PATCH',
    `${WIDGETS}/w1/status`,
    { status: { ready: true } },
    {
      'content-type': 'application/merge-patch+json',
    },
  );
  t.equal(st.body.status.ready, true);
  t.equal(st.body.metadata.generation, 2, 'status changes do not');
  const v2 = await call(s.url, 'GET', '/apis/example.com/v2/namespaces/default/widgets/w1');
  t.equal(v2.body.apiVersion, 'example.com/v2', 'every served version reads the same object');
  const list = await call(s.url, 'GET', WIDGETS);
  t.equal(list.body.kind, 'WidgetList');
  const table = await call(s.url, 'GET', WIDGETS, undefined, {
    accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
  });
  t.same(
    table.body.columnDefinitions.map((c: { name: string }) => c.name),
    ['Name', 'Size', 'Age'],
  );
  t.equal(table.body.rows[0].cells[1], '2');
});

t.test('cluster-scoped CRDs are served without namespaces', async (t) => {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  const crd = widgetCrd({ scope: 'Cluster', names: { plural: 'gadgets', kind: 'Gadget' } });
  crd.metadata.name = 'gadgets.example.com';
  t.equal((await call(s.url, 'POST', CRDS, crd)).status, 201);
  const c = await call(s.url, 'POST', '/apis/example.com/v1/gadgets', {
    apiVersion: 'example.com/v1',
    kind: 'Gadget',
    metadata: { name: 'g1' },
    spec: { size: 1 },
  });
  t.equal(c.status, 201);
  t.equal(c.body.metadata.namespace, undefined);
  t.equal((await call(s.url, 'GET', '/apis/example.com/v1/gadgets/g1')).status, 200);
  t.equal(
    (await call(s.url, 'GET', '/apis/example.com/v1/namespaces/default/gadgets/g1')).status,
    404,
  );
  t.ok(
    (await s.raw()).some((k) => k.startsWith('/registry/example.com/gadgets/g1=')),
    'key layout',
  );
});

t.test('invalid CRDs are refused with causes', async (t) => {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  const before = await s.raw();
  const cases: Array<[string, unknown, string]> = [
    ['name', { ...widgetCrd(), metadata: { name: 'wrong.example.com' } }, 'metadata.name'],
    ['group', widgetCrd({ group: 'nodot' }), 'spec.group'],
    ['scope', widgetCrd({ scope: 'Everywhere' }), 'spec.scope'],
    [
      'storage',
      widgetCrd({
        versions: [
          {
            name: 'v1',
            served: true,
            storage: false,
            schema: { openAPIV3Schema: { type: 'object' } },
          },
        ],
      }),
      'spec.versions',
    ],
    [
      'schema',
      widgetCrd({
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: { type: 'object', properties: { spec: { properties: {} } } },
            },
          },
        ],
      }),
      'spec.versions[0].schema.openAPIV3Schema',
    ],
  ];
  for (const [what, body, field] of cases) {
    const r = await call(s.url, 'POST', CRDS, body);
    t.equal(r.status, 422, what);
    t.ok(
      r.body.details.causes.some((c: { field: string }) => c.field.startsWith(field)),
      `${what}: a cause on ${field}`,
    );
  }
  const builtin = widgetCrd({
    group: 'apps',
    names: { plural: 'deployments', kind: 'Deployment' },
  });
  builtin.metadata.name = 'deployments.apps';
  t.equal((await call(s.url, 'POST', CRDS, builtin)).status, 422, 'a built-in may not be shadowed');
  t.same(await s.raw(), before, 'nothing stored');
});

t.test('deleting a CRD removes its resource and objects; watches see its objects go', async (t) => {
  const s = await withCrd(t);
  await call(s.url, 'POST', WIDGETS, widget('w1', { size: 1 }));
  const w = await openWatch(s.url, `${WIDGETS}?watch=1`);
  t.ok(await w.waitFor((e) => e.length >= 1));
  const del = await call(s.url, 'DELETE', `${CRDS}/widgets.example.com`);
  t.equal(del.status, 200);
  t.ok(await w.waitFor((e) => e.length >= 2));
  t.same(summary(w.events), ['ADDED w1', 'DELETED w1']);
  w.close();
  t.equal((await call(s.url, 'GET', WIDGETS)).status, 404);
  t.equal((await call(s.url, 'GET', '/apis/example.com/v1')).status, 404);
  t.same(
    (await s.raw()).filter((k) => k.startsWith('/registry/example.com/')),
    [],
  );
});
