/**
 * Admission hooks registered by an embedding program: mutating hooks run first and their
 * changes are validated and stored, validating hooks see the mutated object and can refuse
 * with a Status, all before the compare-and-swap (a refusal stores nothing).
 */
import t from 'tap';
import { type AdmissionRequest, StatusError } from '../../src/api/k8s/index.js';
import { call, pod, startKube } from './harness.js';

const PODS = '/api/v1/namespaces/default/pods';

t.test('mutating then validating, before the swap', async (t) => {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  const seen: string[] = [];
  s.kube.admission.mutating({
    name: 'team-label',
    match: { resources: ['pods'], operations: ['CREATE', 'UPDATE'] },
    admit(req) {
      seen.push(`mutate ${req.operation} ${req.name}`);
      const o = req.object as NonNullable<AdmissionRequest['object']>;
      o.metadata.labels = { team: 'core', ...o.metadata.labels };
    },
  });
  s.kube.admission.validating({
    name: 'no-latest',
    match: { resources: ['pods'] },
    validate(req) {
      seen.push(
        `validate ${req.operation} ${req.name} team=${req.object?.metadata.labels?.team ?? '-'}`,
      );
      if (req.operation === 'DELETE' && req.oldObject?.metadata.labels?.keep === 'yes') {
        return { allowed: false, message: 'kept' };
      }
      const spec = req.object?.spec as { containers?: { image: string }[] } | undefined;
      if (spec?.containers?.some((c) => c.image.endsWith(':latest'))) {
        return { allowed: false, message: 'images must be pinned', code: 422 };
      }
    },
  });
  const ok = await call(s.url, 'POST', PODS, pod('a'));
  t.equal(ok.status, 201);
  t.same(ok.body.metadata.labels, { team: 'core' }, 'the mutation is stored');
  const before = await s.raw();
  const bad = pod('b') as { spec: { containers: { name: string; image: string }[] } };
  bad.spec.containers[0] = { name: 'c', image: 'nginx:latest' };
  const denied = await call(s.url, 'POST', PODS, bad);
  t.equal(denied.status, 422);
  t.equal(
    denied.body.message,
    'admission webhook "no-latest" denied the request: images must be pinned',
  );
  t.same(await s.raw(), before, 'nothing stored');
  await call(
    s.url,
    'PATCH',
    `${PODS}/a`,
    { metadata: { labels: { keep: 'yes' } } },
    {
      'content-type': 'application/merge-patch+json',
    },
  );
  const keep = await call(s.url, 'DELETE', `${PODS}/a`);
  t.equal(keep.status, 403);
  t.equal(keep.body.reason, 'Forbidden');
  t.equal((await call(s.url, 'GET', `${PODS}/a`)).status, 200, 'still there');
  const cm = await call(s.url, 'POST', '/api/v1/namespaces/default/configmaps', {
    metadata: { name: 'c' },
  });
  t.equal(cm.body.metadata.labels, undefined, 'match limits hooks to their resources');
  t.same(seen.slice(0, 2), ['mutate CREATE a', 'validate CREATE a team=core']);
});

t.test(
  'hooks may throw Status errors; other failures are 500s; hooks can be removed',
  async (t) => {
    const s = await startKube(t.testdir());
    t.teardown(() => s.close());
    const remove = s.kube.admission.validating({
      name: 'quota',
      validate(req) {
        if (req.dryRun) throw new StatusError('Forbidden', 'no dry runs here');
        if (req.name === 'boom') throw new Error('bug');
      },
    });
    const dry = await call(s.url, 'POST', `${PODS}?dryRun=All`, pod('x'));
    t.equal(dry.status, 403);
    t.equal(dry.body.message, 'no dry runs here');
    const boom = await call(s.url, 'POST', PODS, pod('boom'));
    t.equal(boom.status, 500);
    t.equal(boom.body.reason, 'InternalError');
    t.match(boom.body.message, /admission hook "quota" failed: bug/);
    remove();
    t.equal((await call(s.url, 'POST', PODS, pod('boom'))).status, 201);
  },
);
