/**
 * Bad input to the Kubernetes face: every refusal is a Status with the right code, nothing
 * reaches the store (the whole keyspace is compared before and after), and the member keeps
 * serving.
 */
import { request } from 'node:http';
import t, { type Test } from 'tap';
import { call, type KubeServer, pod, startKube } from './harness.js';

const PODS = '/api/v1/namespaces/default/pods';
const LIMIT = 64 * 1024;

type Case = [
  what: string,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
  code: number,
];

const json = { 'content-type': 'application/json' };
const merge = { 'content-type': 'application/merge-patch+json' };
const jsonPatch = { 'content-type': 'application/json-patch+json' };
const apply = { 'content-type': 'application/apply-patch+yaml' };

const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

const CASES: Case[] = [
  ['malformed JSON', 'POST', PODS, '{"metadata": {"name": "x"', json, 400],
  ['JSON array body', 'POST', PODS, '[1,2,3]', json, 400],
  ['JSON string body', 'POST', PODS, '"pod"', json, 400],
  ['empty body', 'POST', PODS, '', json, 400],
  [
    'malformed YAML',
    'POST',
    PODS,
    'metadata: {name: [x',
    { 'content-type': 'application/yaml' },
    400,
  ],
  [
    'YAML with two documents',
    'POST',
    PODS,
    'a: 1\n---\nb: 2\n',
    { 'content-type': 'application/yaml' },
    400,
  ],
  [
    'protobuf body with the magic and garbage',
    'POST',
    PODS,
    'k8s\0garbage',
    { 'content-type': 'application/vnd.kubernetes.protobuf' },
    400,
  ],
  [
    'protobuf body without the magic',
    'POST',
    PODS,
    '{}',
    { 'content-type': 'application/vnd.kubernetes.protobuf' },
    400,
  ],
  ['unknown body type', 'POST', PODS, '<pod/>', { 'content-type': 'application/xml' }, 415],
  ['deep nesting', 'POST', PODS, `{"metadata":{"name":"x"},"spec":${deep(5000)}}`, json, 400],
  ['metadata not an object', 'POST', PODS, { metadata: 'x' }, json, 400],
  ['labels not strings', 'POST', PODS, { metadata: { name: 'x', labels: { a: 1 } } }, json, 400],
  [
    'wrong kind for the path',
    'POST',
    PODS,
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' } },
    json,
    400,
  ],
  ['wrong apiVersion', 'POST', PODS, { ...pod('x'), apiVersion: 'apps/v1' }, json, 400],
  [
    'namespace mismatch',
    'POST',
    PODS,
    { ...pod('x'), metadata: { name: 'x', namespace: 'kube-system' } },
    json,
    400,
  ],
  ['uppercase name', 'POST', PODS, pod('Web'), json, 422],
  ['underscore name', 'POST', PODS, pod('a_b'), json, 422],
  ['name too long', 'POST', PODS, pod('a'.repeat(254)), json, 422],
  ['no name', 'POST', PODS, { ...pod(''), metadata: {} }, json, 422],
  ['dotted namespace name', 'POST', '/api/v1/namespaces', { metadata: { name: 'a.b' } }, json, 422],
  ['bad label key', 'POST', PODS, pod('x', {}, { 'a b': 'c' }), json, 422],
  ['body over the limit', 'POST', PODS, { ...pod('big'), data: 'x'.repeat(LIMIT) }, json, 413],
  ['unknown resource', 'GET', '/api/v1/namespaces/default/bogus', undefined, {}, 404],
  ['unknown group', 'GET', '/apis/nope.example.com/v1/things', undefined, {}, 404],
  ['unknown version', 'POST', '/api/v2/namespaces/default/pods', pod('x'), json, 404],
  [
    'namespaced path of a cluster kind',
    'GET',
    '/api/v1/namespaces/default/nodes',
    undefined,
    {},
    404,
  ],
  ['unknown subresource', 'GET', `${PODS}/x/exec`, undefined, {}, 404],
  ['create on an item path', 'POST', `${PODS}/x`, pod('x'), json, 405],
  ['update without a name', 'PUT', PODS, pod('x'), json, 405],
  ['create across namespaces', 'POST', '/api/v1/pods', pod('x'), json, 405],
  ['unsupported method', 'OPTIONS', PODS, undefined, {}, 405],
  ['update of a missing object', 'PUT', `${PODS}/ghost`, pod('ghost'), json, 404],
  ['patch of a missing object', 'PATCH', `${PODS}/ghost`, { metadata: {} }, merge, 404],
  ['merge patch null', 'PATCH', `${PODS}/keep`, 'null', merge, 400],
  ['json patch not a list', 'PATCH', `${PODS}/keep`, { op: 'add' }, jsonPatch, 400],
  ['json patch bad op', 'PATCH', `${PODS}/keep`, [{ op: 'frob', path: '/x' }], jsonPatch, 422],
  [
    'patch renaming the object',
    'PATCH',
    `${PODS}/keep`,
    { metadata: { name: 'other' } },
    merge,
    400,
  ],
  ['patch making it invalid', 'PATCH', `${PODS}/keep`, { spec: { containers: null } }, merge, 422],
  ['apply without a manager', 'PATCH', `${PODS}/keep`, '{}', apply, 422],
  ['apply of bad YAML', 'PATCH', `${PODS}/keep?fieldManager=m`, 'a: [', apply, 400],
  ['unknown patch type', 'PATCH', `${PODS}/keep`, '{}', { 'content-type': 'application/xml' }, 415],
  ['bad label selector', 'GET', `${PODS}?labelSelector=a%20in%20(`, undefined, {}, 400],
  ['bad field selector', 'GET', `${PODS}?fieldSelector=spec.bogus%3D1`, undefined, {}, 400],
  ['bad limit', 'GET', `${PODS}?limit=-1`, undefined, {}, 400],
  ['bad resourceVersion', 'GET', `${PODS}?resourceVersion=x1`, undefined, {}, 400],
  ['bad continue', 'GET', `${PODS}?continue=%%%`, undefined, {}, 400],
  ['bad fieldValidation', 'POST', `${PODS}?fieldValidation=Sometimes`, pod('x'), json, 422],
  ['bad delete options', 'DELETE', `${PODS}/keep`, '{"preconditions": 3}', json, 400],
  [
    'stale delete precondition',
    'DELETE',
    `${PODS}/keep`,
    { preconditions: { resourceVersion: '1' } },
    json,
    409,
  ],
];

async function healthy(t: Test, s: KubeServer): Promise<void> {
  const v = await call(s.url, 'GET', '/api/v1/namespaces/default');
  t.equal(v.status, 200, 'the member still serves');
}

t.test('every bad request is a Status with the right code and stores nothing', async (t) => {
  const s = await startKube(t.testdir(), { maxRequestBytes: LIMIT });
  t.teardown(() => s.close());
  t.equal((await call(s.url, 'POST', PODS, pod('keep'))).status, 201);
  const before = await s.raw();
  for (const [what, method, path, body, headers, code] of CASES) {
    const r = await call(s.url, method, path, body, headers);
    t.equal(r.status, code, `${what}: ${r.text.slice(0, 200)}`);
    t.match(
      r.body,
      { kind: 'Status', apiVersion: 'v1', status: 'Failure', code },
      `${what}: Status body`,
    );
    t.match(r.headers.get('content-type'), /^application\/json/, `${what}: JSON`);
  }
  t.same(await s.raw(), before, 'the keyspace is unchanged');
  await healthy(t, s);
});

t.test('an oversized body sent without a length is cut off, and the member stays up', async (t) => {
  const s = await startKube(t.testdir(), { maxRequestBytes: LIMIT });
  t.teardown(() => s.close());
  const before = await s.raw();
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(
      `${s.url}${PODS}`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    req.write('{"metadata":{"name":"big"},"x":"');
    let sent = 0;
    const pump = () => {
      while (sent < 4 * LIMIT) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      req.end('"}');
    };
    pump();
  });
  t.equal(status, 413);
  t.same(await s.raw(), before);
  await healthy(t, s);
});

t.test('deeply nested YAML is refused from its raw text while other requests go on', async (t) => {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  t.equal((await call(s.url, 'POST', PODS, pod('keep'))).status, 201);
  const before = await s.raw();
  const mib = 1400 * 1024;
  const yaml = { 'content-type': 'application/yaml' };
  const bodies: Array<[string, string, string, string, Record<string, string>]> = [
    [
      'apply of nested flow sequences',
      'PATCH',
      `${PODS}/keep?fieldManager=m`,
      `spec: ${'['.repeat(mib)}`,
      apply,
    ],
    [
      'apply of nested mappings',
      'PATCH',
      `${PODS}/keep?fieldManager=m`,
      `${'{a: '.repeat(mib / 4)}`,
      apply,
    ],
    [
      'apply of compact sequences',
      'PATCH',
      `${PODS}/keep?fieldManager=m`,
      `spec: \n${'- '.repeat(mib / 2)}x`,
      apply,
    ],
    ['YAML create', 'POST', PODS, `metadata: ${'['.repeat(mib)}`, yaml],
  ];
  // All at once, with a read among them: each is answered, the refusals say why.
  const [read, ...refused] = await Promise.all([
    call(s.url, 'GET', `${PODS}/keep`),
    ...bodies.map(([, method, path, body, headers]) => call(s.url, method, path, body, headers)),
  ]);
  t.equal(read?.status, 200, 'the concurrent read is answered');
  for (const [i, [what]] of bodies.entries()) {
    const r = refused[i];
    t.equal(r?.status, 400, what);
    // The parser's own failure would be a stack overflow; this text comes from the raw scan.
    t.match(r?.body, { kind: 'Status', code: 400, message: /nested deeper than 200 levels/ }, what);
  }
  t.same(await s.raw(), before, 'nothing was written');
  await healthy(t, s);
});

t.test('a YAML alias bomb is refused', async (t) => {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  t.equal((await call(s.url, 'POST', PODS, pod('keep'))).status, 201);
  const before = await s.raw();
  const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 9; i++)
    lines.push(
      `a${i}: &a${i} [${Array(10)
        .fill(`*a${i - 1}`)
        .join(', ')}]`,
    );
  const bomb = `${lines.join('\n')}\nmetadata: {name: keep}\n`;
  const applied = await call(s.url, 'PATCH', `${PODS}/keep?fieldManager=m`, bomb, apply);
  t.equal(applied.status, 400, applied.text.slice(0, 200));
  const created = await call(s.url, 'POST', PODS, bomb, { 'content-type': 'application/yaml' });
  t.equal(created.status, 400, created.text.slice(0, 200));
  t.match(created.body, { message: /alias/i });
  t.same(await s.raw(), before);
  await healthy(t, s);
});
