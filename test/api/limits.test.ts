/**
 * Request-size limits on every route kind of one member (README, "Limits"), over real HTTP
 * and gRPC on 127.0.0.1: an oversized body on each route (the etcd JSON API, the Kubernetes
 * face's JSON, YAML and protobuf creates, updates and every patch type, gRPC messages) gets
 * the documented error and changes nothing; JSON nested past the bound (etcd: 10,000 levels,
 * Kubernetes: 200) is refused on both faces before it is parsed; a billion-laughs YAML body is a 400; a label selector longer than
 * node:http's header bound is a 431; a JSON patch of more than 10 000 operations is a 413.
 * After each, the member still answers a normal request.
 */
import grpc from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import { startSingle } from '../server/helpers.js';
import { b, RawClient } from './grpc/client.js';

const MAX = 512 * 1024;
const member = await startSingle(t.testdir(), { maxRequestBytes: MAX });
t.teardown(() => member.stop());
const url = String(member.clientUrls[0]).replace(/\/$/, '');
const host = new URL(url).host;
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const CM = '/api/v1/namespaces/default/configmaps';

async function send(
  method: string,
  path: string,
  body: string | Buffer,
  contentType = 'application/json',
): Promise<{ status: number; text: string }> {
  const r = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': contentType },
    body,
  });
  return { status: r.status, text: await r.text() };
}

async function etcdValue(key: string): Promise<string | undefined> {
  const r = await send('POST', '/v3/kv/range', JSON.stringify({ key: b64(key) }));
  const kvs = (JSON.parse(r.text) as { kvs?: { value: string }[] }).kvs;
  return kvs?.[0] === undefined ? undefined : Buffer.from(kvs[0].value, 'base64').toString();
}

async function configMapData(name: string): Promise<unknown> {
  const r = await fetch(`${url}${CM}/${name}`);
  return r.status === 404 ? undefined : ((await r.json()) as { data?: unknown }).data;
}

async function stillServes(t: Test, key: string): Promise<void> {
  const r = await send('POST', '/v3/kv/put', JSON.stringify({ key: b64(key), value: b64('ok') }));
  t.equal(r.status, 200, 'the member still answers a normal request');
}

const big = 'x'.repeat(MAX + 64 * 1024);
const huge = 'x'.repeat(3 * MAX);
const cm = (name: string, value: string) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v: value } });

t.test(
  'an oversized body on every route kind: the documented error, nothing changed',
  async (t) => {
    // The objects the updates and patches would change.
    t.equal((await send('POST', CM, cm('target', 'before'))).status, 201);
    t.equal(
      (
        await send(
          'POST',
          '/v3/kv/put',
          JSON.stringify({ key: b64('target'), value: b64('before') }),
        )
      ).status,
      200,
    );
    const etcdRows: [string, string, string][] = [
      [
        'put over --max-request-bytes',
        '/v3/kv/put',
        JSON.stringify({ key: b64('target'), value: b64(big) }),
      ],
      [
        'put over the raw body bound',
        '/v3/kv/put',
        JSON.stringify({ key: b64('target'), value: b64(huge) }),
      ],
      [
        'txn',
        '/v3/kv/txn',
        JSON.stringify({ success: [{ request_put: { key: b64('target'), value: b64(big) } }] }),
      ],
      [
        'lease grant (any route reads the body bounded)',
        '/v3/lease/grant',
        JSON.stringify({ TTL: 60, pad: huge }),
      ],
    ];
    for (const [name, path, body] of etcdRows) {
      const r = await send('POST', path, body);
      t.equal(r.status, 400, `etcd JSON ${name}: 400`);
      t.match(r.text, /etcdserver: request is too large/, `etcd JSON ${name}: etcd's text`);
    }
    t.equal(await etcdValue('target'), 'before', 'the etcd key is unchanged');

    const proto = Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), Buffer.alloc(MAX + 1024)]);
    const yaml = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  v: ${big}\n`;
    const kubeRows: [string, string, string, string | Buffer, string][] = [
      ['JSON create', 'POST', CM, cm('big', big), 'application/json'],
      ['YAML create', 'POST', CM, yaml, 'application/yaml'],
      ['protobuf create', 'POST', CM, proto, 'application/vnd.kubernetes.protobuf'],
      ['JSON update', 'PUT', `${CM}/target`, cm('target', big), 'application/json'],
      [
        'merge patch',
        'PATCH',
        `${CM}/target`,
        JSON.stringify({ data: { v: big } }),
        'application/merge-patch+json',
      ],
      [
        'strategic merge patch',
        'PATCH',
        `${CM}/target`,
        JSON.stringify({ data: { v: big } }),
        'application/strategic-merge-patch+json',
      ],
      [
        'JSON patch',
        'PATCH',
        `${CM}/target`,
        JSON.stringify([{ op: 'replace', path: '/data/v', value: big }]),
        'application/json-patch+json',
      ],
      [
        'server-side apply',
        'PATCH',
        `${CM}/target?fieldManager=t`,
        cm('target', big),
        'application/apply-patch+yaml',
      ],
    ];
    for (const [name, method, path, body, type] of kubeRows) {
      const r = await send(method, path, body, type);
      t.equal(r.status, 413, `Kubernetes ${name}: 413`);
      t.match(r.text, /"reason":"RequestEntityTooLarge"/, `Kubernetes ${name}: the Status reason`);
    }
    t.equal(await configMapData('big'), undefined, 'no object was created');
    t.same(await configMapData('target'), { v: 'before' }, 'the object is unchanged');

    const c = new RawClient(host);
    t.teardown(() => c.close());
    const over = await c
      .call('/etcdserverpb.KV/Put', { key: b('target'), value: Buffer.from(big) })
      .then(
        () => undefined,
        (e: grpc.ServiceError) => e,
      );
    t.equal(over?.code, grpc.status.INVALID_ARGUMENT, 'gRPC Put over --max-request-bytes');
    t.match(over?.details, /etcdserver: request is too large/);
    const past = await c
      .call('/etcdserverpb.KV/Put', { key: b('target'), value: Buffer.from(huge) })
      .then(
        () => undefined,
        (e: grpc.ServiceError) => e,
      );
    t.equal(past?.code, grpc.status.RESOURCE_EXHAUSTED, 'gRPC past the 512 KiB allowance');
    t.equal(await etcdValue('target'), 'before', 'the etcd key is still unchanged');
    await stillServes(t, 'after-sizes');
  },
);

const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

t.test('JSON nested too deeply is refused on both faces, before parsing', async (t) => {
  const rows: [string, string, string][] = [
    [
      'just past the bound (etcd 10,000 levels, Kubernetes 200)',
      JSON.stringify({ key: b64('deep') }).replace('}', `,"pad":${deep(10_001)}}`),
      `{"apiVersion":"v1","kind":"ConfigMap","x":${deep(201)}}`,
    ],
    ['half a megabyte of [', deep(250_000), deep(250_000)],
  ];
  for (const [name, etcdBody, kubeBody] of rows) {
    const r = await send('POST', '/v3/kv/range', etcdBody);
    t.equal(r.status, 400, `etcd JSON, ${name}: 400`);
    t.match(
      r.text,
      /the request body nests too deeply/,
      `etcd JSON, ${name}: ERR_NESTING_TOO_DEEP`,
    );
    const k = await send('POST', CM, kubeBody);
    t.equal(k.status, 400, `Kubernetes JSON, ${name}: 400`);
    t.match(k.text, /nested deeper than 200 levels/, `Kubernetes JSON, ${name}: the reason`);
  }
  const ok = await send('POST', '/v3/kv/range', `{"key":"${b64('deep')}","pad":${deep(150)}}`);
  t.match(
    ok.text,
    /unknown request field|pad/,
    '150 levels pass the depth check (then fail as a field)',
  );
  await stillServes(t, 'after-depth');
});

t.test('a billion-laughs YAML body is a 400, and the member keeps serving', async (t) => {
  const names = 'abcdefghi'.split('');
  const lines = [`a: &a [${Array(9).fill('"lol"').join(',')}]`];
  for (let i = 1; i < names.length; i++)
    lines.push(
      `${names[i]}: &${names[i]} [${Array(9)
        .fill(`*${names[i - 1]}`)
        .join(',')}]`,
    );
  const body = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\n  annotations:\n${lines
    .map((l) => `    ${l}`)
    .join('\n')}\n`;
  const r = await send('POST', CM, body, 'application/yaml');
  t.equal(r.status, 400);
  t.match(r.text, /yaml parse error/);
  t.match(r.text, /alias/i, 'the error names the aliases');
  t.equal(await configMapData('laughs'), undefined, 'nothing was created');
  await stillServes(t, 'after-laughs');
});

t.test(
  'label selectors are bounded by the request line; patches by their operations',
  async (t) => {
    const long = Array.from({ length: 2000 }, (_, i) => `k${i}=v`).join(',');
    const r = await fetch(`${url}${CM}?labelSelector=${encodeURIComponent(long)}`);
    t.equal(r.status, 431, 'a selector past 16 KiB of request line: 431 from node:http');
    await r.arrayBuffer();
    const fits = Array.from({ length: 1000 }, (_, i) => `k${i}=v`).join(',');
    const f = await fetch(`${url}${CM}?labelSelector=${encodeURIComponent(fits)}`);
    t.equal(f.status, 200, 'a thousand terms within the bound are served');
    t.same(((await f.json()) as { items: unknown[] }).items, [], 'and match nothing here');

    const ops = JSON.stringify(
      Array.from({ length: 10_001 }, () => ({ op: 'test', path: '/kind', value: 'ConfigMap' })),
    );
    t.ok(ops.length < MAX, 'the patch itself is within --max-request-bytes');
    const p = await send('PATCH', `${CM}/target`, ops, 'application/json-patch+json');
    t.equal(p.status, 413, 'more than 10 000 JSON patch operations: 413');
    t.match(p.text, /The allowed maximum operations in a JSON patch is 10000/);
    t.same(await configMapData('target'), { v: 'before' }, 'the object is unchanged');
    await stillServes(t, 'after-patch');
  },
);
