/**
 * Protobuf request bodies (kubectl's one-line generators): the k8s\0 envelope, maps, nested
 * messages, IntOrString, Go's always-written zero values dropped, unknown fields skipped,
 * and broken or unknown bodies refused with a Status.
 */
import t from 'tap';
import { decodeProtobufBody } from '../../src/k8s/protobuf.js';
import type { StatusError } from '../../src/k8s/status.js';
import { call, startKube } from './harness.js';

const varint = (n: number): number[] => {
  const out: number[] = [];
  let v = BigInt.asUintN(64, BigInt(n));
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
};
const tag = (num: number, wire: number) => varint((num << 3) | wire);
const bytes = (num: number, b: number[] | Uint8Array) => [
  ...tag(num, 2),
  ...varint(b.length),
  ...b,
];
const str = (num: number, s: string) => bytes(num, [...Buffer.from(s)]);
const int = (num: number, n: number) => [...tag(num, 0), ...varint(n)];
const entry = (num: number, k: string, v: string) => bytes(num, [...str(1, k), ...str(2, v)]);
const envelope = (apiVersion: string, kind: string, raw: number[]) =>
  new Uint8Array([
    0x6b,
    0x38,
    0x73,
    0,
    ...bytes(1, [...str(1, apiVersion), ...str(2, kind)]),
    ...bytes(2, raw),
  ]);

const meta = (name: string) =>
  bytes(1, [...str(1, name), ...str(2, ''), ...bytes(8, []), ...entry(11, 'app', name)]);

t.test('decodes the kinds of the one-line generators', async (t) => {
  const cm = decodeProtobufBody(
    envelope('v1', 'ConfigMap', [...meta('cm'), ...entry(2, 'a', 'b'), ...entry(2, 'empty', '')]),
  );
  t.same(cm, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', labels: { app: 'cm' } },
    data: { a: 'b', empty: '' },
  });
  const container = [
    ...str(1, 'nginx'),
    ...str(2, 'nginx:1.27'),
    ...bytes(6, int(3, 80)),
    ...bytes(8, []),
    ...int(16, 0),
  ];
  const podSpec = [...bytes(2, container), ...str(3, '')];
  const template = [...bytes(1, [...entry(11, 'app', 'web')]), ...bytes(2, podSpec)];
  const spec = [
    ...int(1, 0),
    ...bytes(2, entry(1, 'app', 'web')),
    ...bytes(3, template),
    ...bytes(4, str(1, '')),
    ...int(99, 7),
  ];
  const d = decodeProtobufBody(
    envelope('apps/v1', 'Deployment', [...meta('web'), ...bytes(2, spec), ...bytes(3, [])]),
  );
  t.same(d, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', labels: { app: 'web' } },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            { name: 'nginx', image: 'nginx:1.27', ports: [{ containerPort: 80 }], resources: {} },
          ],
        },
      },
      strategy: {},
    },
    status: {},
  });
  const port = [...str(1, 'http'), ...int(3, 80), ...bytes(4, [...int(1, 1), ...str(3, 'web')])];
  const svc = decodeProtobufBody(
    envelope('v1', 'Service', [
      ...meta('s'),
      ...bytes(2, [...bytes(1, port), ...str(4, 'ClusterIP')]),
    ]),
  );
  t.same((svc.spec as { ports: unknown[] }).ports, [{ name: 'http', port: 80, targetPort: 'web' }]);
  const secret = decodeProtobufBody(
    envelope('v1', 'Secret', [...meta('s'), ...bytes(2, [...str(1, 'k'), ...bytes(2, [0, 255])])]),
  );
  t.same(secret.data, { k: Buffer.from([0, 255]).toString('base64') });
});

t.test('broken and unknown bodies are refused', async (t) => {
  const refuse = (b: Uint8Array, code: number, what: string) => {
    try {
      decodeProtobufBody(b);
      t.fail(`${what}: accepted`);
    } catch (e) {
      t.equal((e as StatusError).httpCode, code, what);
    }
  };
  refuse(new Uint8Array([1, 2, 3]), 400, 'no magic');
  refuse(envelope('v1', 'ConfigMap', [...str(1, 'x')]).slice(0, 20), 400, 'truncated');
  refuse(envelope('v1', 'ConfigMap', [...int(1, 5)]), 400, 'wrong wire type');
  refuse(envelope('v1', 'Pod', meta('p')), 415, 'a kind without a decoder');
});

t.test('a protobuf create over HTTP', async (t) => {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  const body = envelope('v1', 'Namespace', [...meta('team'), ...bytes(2, []), ...bytes(3, [])]);
  const r = await fetch(`${s.url}/api/v1/namespaces`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' },
    body,
  });
  t.equal(r.status, 201);
  const ns = (await r.json()) as { metadata: { name: string }; status: { phase: string } };
  t.equal(ns.metadata.name, 'team');
  t.equal(ns.status.phase, 'Active');
  t.equal((await call(s.url, 'GET', '/api/v1/namespaces/team')).status, 200);
});
