/**
 * Fuzzing the Kubernetes face: thousands of random and mutated requests (paths, methods,
 * query parameters, bodies and media types, built from valid ones and then broken), bounded
 * in count and time. No answer may be a 5xx, every answer must be JSON, and the member must
 * keep serving. The seed is printed; FUZZ_SEED=<n> replays a run.
 */
import t from 'tap';
import { call, pod, startKube } from './harness.js';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const COUNT = Number(process.env.FUZZ_COUNT ?? 600);
/** A bound on the loop, not a speed expected of the member: a loaded machine still finishes. */
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 120_000);

/** mulberry32: a small seeded generator, so a failing run can be replayed. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = rng(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
const chance = (p: number) => rand() < p;

const PREFIXES = [
  '/api/v1/namespaces/default/pods',
  '/api/v1/namespaces/kube-system/configmaps',
  '/api/v1/namespaces/default/secrets',
  '/api/v1/namespaces/default/services',
  '/api/v1/pods',
  '/api/v1/namespaces',
  '/api/v1/nodes',
  '/apis/apps/v1/namespaces/default/deployments',
  '/apis/apps/v1/deployments',
  '/apis/coordination.k8s.io/v1/namespaces/default/leases',
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
  '/apis/example.com/v1/namespaces/default/widgets',
  '/api',
  '/apis',
  '/api/v1',
  '/apis/apps',
  '/openapi/v3',
  '/openapi/v3/apis/apps/v1',
  '/version',
];
const NAMES = [
  'p1',
  'web',
  'x',
  'Bad_Name',
  '',
  '..',
  '%2F',
  'a'.repeat(300),
  'default',
  'widgets.example.com',
];
const SUBS = ['', '', '', '/status', '/scale', '/exec', '/x/y'];
const METHODS = ['GET', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const TYPES = [
  'application/json',
  'application/json',
  'application/merge-patch+json',
  'application/json-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
  'application/yaml',
  'application/vnd.kubernetes.protobuf',
  'text/plain',
  '',
];
const PARAMS: Array<() => string> = [
  () =>
    `labelSelector=${encodeURIComponent(pick(['app=web', 'a in (b,c)', '!x', 'a in (', '=', 'a!=b,c']))}`,
  () =>
    `fieldSelector=${encodeURIComponent(pick(['metadata.name=x', 'spec.nodeName=n1', 'status.phase!=Running', 'foo=bar', '==', 'a=b=c']))}`,
  () => `limit=${pick(['1', '2', '0', '-1', 'x', '99999999999999999999'])}`,
  () => `continue=${pick(['abc', 'eyJ2IjoxLCJydiI6MSwic3RhcnQiOiIvIn0', '%%', ''])}`,
  () => `resourceVersion=${pick(['0', '1', '', 'x', '999999'])}`,
  () => `resourceVersionMatch=${pick(['Exact', 'NotOlderThan', 'Bogus'])}`,
  () => `dryRun=${pick(['All', 'None', ''])}`,
  () => `fieldValidation=${pick(['Strict', 'Warn', 'Ignore', 'Bogus'])}`,
  () => `fieldManager=${pick(['kubectl', '', 'a'.repeat(200), '%00'])}`,
  () => `force=${pick(['true', 'false', 'x'])}`,
  () => `includeObject=${pick(['None', 'Object', 'x'])}`,
  () => `sendInitialEvents=${pick(['true', 'false'])}`,
];

const SEEDS: unknown[] = [
  pod('p1', {}, { app: 'web' }),
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { k: 'v' } },
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { k: 'v' } },
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'c', image: 'i' }] },
      },
    },
  },
  [{ op: 'add', path: '/metadata/labels', value: { a: 'b' } }],
  [{ op: 'remove', path: '/spec' }],
  {
    spec: {
      containers: [{ name: 'c', $patch: 'delete' }],
      '$setElementOrder/containers': [{ name: 'c' }],
    },
  },
  { metadata: { labels: null, finalizers: ['x/y'] }, $patch: 'replace' },
  { propagationPolicy: 'Background', preconditions: { uid: 'u' } },
  {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'widgets', kind: 'Widget' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object' } },
        },
      ],
    },
  },
];

const WEIRD: unknown[] = [
  null,
  true,
  0,
  -1,
  1e308,
  '',
  'x',
  [],
  {},
  [[[]]],
  { $patch: 'delete' },
  '\u0000',
  'a'.repeat(5000),
];

/** A random change somewhere inside a JSON value. */
function mutate(v: unknown, depth = 0): unknown {
  if (depth > 6 || chance(0.15)) return pick(WEIRD);
  if (Array.isArray(v)) {
    const out = [...v];
    if (out.length > 0 && chance(0.5)) {
      const i = Math.floor(rand() * out.length);
      out[i] = mutate(out[i], depth + 1);
    } else out.push(pick(WEIRD));
    return out;
  }
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = { ...(v as Record<string, unknown>) };
    const keys = Object.keys(out);
    if (keys.length > 0 && chance(0.7)) {
      const k = pick(keys);
      if (chance(0.2)) delete out[k];
      else out[k] = mutate(out[k], depth + 1);
    } else
      out[pick(['metadata', 'spec', 'kind', 'apiVersion', 'status', 'x', '$patch'])] = pick(WEIRD);
    return out;
  }
  return pick(WEIRD);
}

function body(): string | undefined {
  const r = rand();
  if (r < 0.15) return undefined;
  const base = pick(SEEDS);
  const value = chance(0.3) ? base : mutate(base);
  let text = JSON.stringify(value) ?? 'null';
  if (chance(0.1)) text = text.slice(0, Math.floor(rand() * text.length));
  if (chance(0.05)) {
    const i = Math.floor(rand() * text.length);
    text = text.slice(0, i) + String.fromCharCode(Math.floor(rand() * 256)) + text.slice(i + 1);
  }
  if (chance(0.03)) text = 'a: [b\n  - c: {';
  return text;
}

function path(): string {
  let p = pick(PREFIXES);
  if (chance(0.5) && !p.startsWith('/openapi') && p !== '/version')
    p += `/${pick(NAMES)}${pick(SUBS)}`;
  if (chance(0.05)) p = p.replace(/\/[^/]*$/, `/${pick(NAMES)}`);
  const params: string[] = [];
  while (chance(0.45)) params.push(pick(PARAMS)());
  return params.length > 0 ? `${p}?${params.join('&')}` : p;
}

const TARGETS = [
  { coll: '/api/v1/namespaces/default/pods', name: 'p1', seed: 0 },
  { coll: '/api/v1/namespaces/default/configmaps', name: 'c', seed: 1 },
  { coll: '/api/v1/namespaces/default/secrets', name: 's', seed: 2 },
  { coll: '/apis/apps/v1/namespaces/default/deployments', name: 'web', seed: 3 },
  {
    coll: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    name: 'widgets.example.com',
    seed: 9,
  },
];
const PATCHES: Array<[string, unknown]> = [
  ['application/merge-patch+json', { metadata: { labels: { a: 'b' } }, spec: { replicas: 2 } }],
  ['application/json-patch+json', [{ op: 'replace', path: '/metadata/labels', value: { x: 'y' } }]],
  ['application/strategic-merge-patch+json', SEEDS[6]],
  [
    'application/strategic-merge-patch+json',
    { metadata: { $deleteFromPrimitiveList: ['x'] }, spec: { $retainKeys: ['a'] } },
  ],
  ['application/apply-patch+yaml', SEEDS[0]],
];

/** A request aimed at a live object: create, replace, patch or delete it with a mutated body. */
function targeted(): { method: string; path: string; body: string; type: string } {
  const target = pick(TARGETS);
  const item = `${target.coll}/${target.name}`;
  const seed = SEEDS[target.seed];
  const text = (v: unknown) => JSON.stringify(chance(0.3) ? v : mutate(v)) ?? 'null';
  const r = rand();
  if (r < 0.3)
    return { method: 'POST', path: target.coll, body: text(seed), type: 'application/json' };
  if (r < 0.45) return { method: 'PUT', path: item, body: text(seed), type: 'application/json' };
  if (r < 0.9) {
    const [type, patch] = pick(PATCHES);
    const q = type === 'application/apply-patch+yaml' ? '?fieldManager=fuzz&force=true' : '';
    return {
      method: 'PATCH',
      path: `${item}${chance(0.2) ? '/status' : ''}${q}`,
      body: text(patch),
      type,
    };
  }
  return { method: 'DELETE', path: item, body: '', type: 'application/json' };
}

t.test(`random and mutated requests (seed ${SEED})`, async (t) => {
  t.comment(`FUZZ_SEED=${SEED}`);
  const s = await startKube(t.testdir(), { maxRequestBytes: 256 * 1024, freshTimeoutMs: 20 });
  t.teardown(() => s.close());
  const started = Date.now();
  const codes = new Map<number, number>();
  let sent = 0;
  let failures = 0;
  const one = async () => {
    // Half the requests are well aimed (a write of a live object with a mutated body), so
    // that patches and updates reach the merge and validation code, not only the router.
    const aimed = chance(0.5) ? targeted() : undefined;
    const method = aimed?.method ?? pick(METHODS);
    const p = aimed?.path ?? path();
    const b = method === 'GET' || method === 'HEAD' ? undefined : (aimed?.body ?? body());
    const headers: Record<string, string> = {};
    const type = aimed?.type ?? pick(TYPES);
    if (b !== undefined && type) headers['content-type'] = type;
    if (chance(0.2))
      headers.accept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
    sent++;
    const r = await call(s.url, method, p, b, headers);
    codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
    // 504 for a resourceVersion the member has not reached is Kubernetes' own answer.
    const tooLarge =
      r.status === 504 && r.body?.details?.causes?.[0]?.reason === 'ResourceVersionTooLarge';
    const bad = (r.status >= 500 && !tooLarge) || (method !== 'HEAD' && r.body === undefined);
    if (bad && failures++ < 5) {
      t.fail(
        `${method} ${p} ${type} -> ${r.status} ${r.text.slice(0, 300)} body=${(b ?? '').slice(0, 300)}`,
      );
    }
  };
  // A few requests in flight at once, as clients do (and so that writes race each other).
  const worker = async () => {
    while (sent < COUNT && Date.now() - started < BUDGET_MS) await one();
  };
  await Promise.all(Array.from({ length: 6 }, worker));
  t.equal(failures, 0, `no 5xx and JSON answers over ${sent} requests`);
  t.equal(sent, COUNT, `sent all ${COUNT} requests`);
  t.comment(`codes: ${JSON.stringify(Object.fromEntries([...codes].sort((a, b) => a[0] - b[0])))}`);
  t.equal((await call(s.url, 'GET', '/version')).status, 200, 'the member still serves');
  t.equal((await call(s.url, 'GET', '/api/v1/namespaces')).status, 200, 'and lists');
});
