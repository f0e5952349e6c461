/**
 * The pods/binding subresource over HTTP: a Binding sets spec.nodeName once together with
 * the PodScheduled=True condition; a second Binding, a pod being deleted, a bad Binding and
 * a name mismatch are refused and change nothing; of concurrent Bindings exactly one wins.
 */
import t, { type Test } from 'tap';
import { call, type KubeServer, pod, startKube } from '../k8s/harness.js';

const PODS = '/api/v1/namespaces/default/pods';

async function withServer(t: Test): Promise<KubeServer> {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  return s;
}

function binding(name: string, node: string, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Binding',
    metadata: { name, ...extra },
    target: { apiVersion: 'v1', kind: 'Node', name: node },
  };
}

t.test('a Binding sets nodeName and PodScheduled=True; a second one is 409', async (t) => {
  const s = await withServer(t);
  const created = await call(s.url, 'POST', PODS, pod('web'));
  t.equal(created.status, 201);
  const b = await call(
    s.url,
    'POST',
    `${PODS}/web/binding`,
    binding('web', 'n1', { annotations: { 'scheduled-by': 'test' } }),
  );
  t.equal(b.status, 201, b.text);
  t.match(b.body, { kind: 'Status', status: 'Success', code: 201 });
  const g = await call(s.url, 'GET', `${PODS}/web`);
  t.equal(g.body.spec.nodeName, 'n1');
  t.equal(g.body.metadata.annotations['scheduled-by'], 'test');
  const cond = g.body.status.conditions.find((c: { type: string }) => c.type === 'PodScheduled');
  t.match(cond, { type: 'PodScheduled', status: 'True' });
  t.match(cond.lastTransitionTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.equal(g.body.status.phase, 'Pending', 'the rest of the status is kept');
  t.not(g.body.metadata.resourceVersion, created.body.metadata.resourceVersion);

  const before = await s.raw();
  const again = await call(s.url, 'POST', `${PODS}/web/binding`, binding('web', 'n2'));
  t.equal(again.status, 409);
  t.equal(again.body.reason, 'Conflict');
  t.equal(
    again.body.message,
    'Operation cannot be fulfilled on pods "web": pod web is already assigned to node "n1"',
  );
  t.same(await s.raw(), before, 'the refused binding stored nothing');
});

t.test('a Binding replaces a PodScheduled=False condition', async (t) => {
  const s = await withServer(t);
  await call(s.url, 'POST', PODS, pod('web'));
  const st = await call(
    s.url,
    'PATCH',
    `${PODS}/web/status`,
    {
      status: {
        conditions: [
          { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: 'no nodes' },
        ],
      },
    },
    { 'content-type': 'application/merge-patch+json' },
  );
  t.equal(st.status, 200, st.text);
  t.equal((await call(s.url, 'POST', `${PODS}/web/binding`, binding('web', 'n1'))).status, 201);
  const g = await call(s.url, 'GET', `${PODS}/web`);
  const conds = g.body.status.conditions.filter((c: { type: string }) => c.type === 'PodScheduled');
  t.equal(conds.length, 1);
  t.equal(conds[0].status, 'True');
  t.equal(conds[0].reason, undefined);
});

t.test('bad Bindings are refused with Kubernetes errors and change nothing', async (t) => {
  const s = await withServer(t);
  await call(s.url, 'POST', PODS, pod('web'));
  const before = await s.raw();
  const noTarget = await call(s.url, 'POST', `${PODS}/web/binding`, {
    kind: 'Binding',
    metadata: { name: 'web' },
    target: {},
  });
  t.equal(noTarget.status, 422);
  t.equal(noTarget.body.reason, 'Invalid');
  t.match(noTarget.body.message, /target\.name: Required value/);
  const badKind = await call(s.url, 'POST', `${PODS}/web/binding`, {
    kind: 'Binding',
    metadata: { name: 'web' },
    target: { kind: 'Pod', name: 'n1' },
  });
  t.equal(badKind.status, 422);
  t.match(badKind.body.message, /target\.kind: Unsupported value: "Pod"/);
  const mismatch = await call(s.url, 'POST', `${PODS}/web/binding`, binding('other', 'n1'));
  t.equal(mismatch.status, 400);
  t.equal(mismatch.body.message, 'name in URL does not match name in Binding object');
  const notJson = await call(s.url, 'POST', `${PODS}/web/binding`, '{', {
    'content-type': 'application/json',
  });
  t.equal(notJson.status, 400);
  const missing = await call(s.url, 'POST', `${PODS}/nope/binding`, binding('nope', 'n1'));
  t.equal(missing.status, 404);
  const get = await call(s.url, 'GET', `${PODS}/web/binding`);
  t.equal(get.status, 405);
  const wrongUid = await call(
    s.url,
    'POST',
    `${PODS}/web/binding`,
    binding('web', 'n1', { uid: '00000000-0000-0000-0000-000000000000' }),
  );
  t.equal(wrongUid.status, 409);
  t.match(wrongUid.body.message, /Precondition failed: UID in precondition/);
  const dry = await call(s.url, 'POST', `${PODS}/web/binding?dryRun=All`, binding('web', 'n1'));
  t.equal(dry.status, 201);
  const svc = await call(s.url, 'POST', '/api/v1/namespaces/default/configmaps/x/binding', {});
  t.equal(svc.status, 404, 'only pods have the binding subresource');
  t.same(await s.raw(), before, 'nothing was stored');
});

t.test('a pod being deleted cannot be bound', async (t) => {
  const s = await withServer(t);
  await call(s.url, 'POST', PODS, {
    ...pod('web'),
    metadata: { name: 'web', finalizers: ['example.com/hold'] },
  });
  t.equal((await call(s.url, 'DELETE', `${PODS}/web`)).status, 200);
  const b = await call(s.url, 'POST', `${PODS}/web/binding`, binding('web', 'n1'));
  t.equal(b.status, 409);
  t.equal(
    b.body.message,
    'Operation cannot be fulfilled on pods "web": pod web is being deleted, cannot be assigned to a host',
  );
});

t.test('of concurrent Bindings to different nodes exactly one wins', async (t) => {
  const s = await withServer(t);
  for (let round = 0; round < 5; round++) {
    const name = `race-${round}`;
    await call(s.url, 'POST', PODS, pod(name));
    const answers = await Promise.all(
      ['n1', 'n2', 'n3', 'n4'].map((n) =>
        call(s.url, 'POST', `${PODS}/${name}/binding`, binding(name, n)),
      ),
    );
    const codes = answers.map((a) => a.status).sort();
    t.same(codes, [201, 409, 409, 409], `round ${round}`);
    const winner = ['n1', 'n2', 'n3', 'n4'][answers.findIndex((a) => a.status === 201)];
    const g = await call(s.url, 'GET', `${PODS}/${name}`);
    t.equal(g.body.spec.nodeName, winner);
  }
});
