/**
 * A few hundred random and mutated bodies at every POST route: none may get a 5xx, each
 * refusal is a well-formed etcd error, and the server answers normally afterwards.
 * Deterministic: the seed is printed, and FUZZ_SEED=<n> replays a run.
 */
import t from 'tap';
import { send, startDouble } from './servers.js';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const ROUNDS = 500;

/** mulberry32: a small seeded PRNG. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const b = (s: string) => Buffer.from(s).toString('base64');

/** A valid body per route, to mutate. */
const BASES: Array<[string, unknown]> = [
  [
    '/v3/kv/range',
    {
      key: b('a'),
      range_end: b('z'),
      limit: 5,
      sort_order: 'DESCEND',
      sort_target: 'MOD',
      keys_only: true,
    },
  ],
  ['/v3/kv/put', { key: b('a'), value: b('v'), prev_kv: true }],
  ['/v3/kv/deleterange', { key: b('q'), range_end: b('r'), prev_kv: true }],
  [
    '/v3/kv/txn',
    {
      compare: [{ key: b('a'), target: 'VERSION', result: 'GREATER', version: '0' }],
      success: [
        { request_put: { key: b('t'), value: b('1') } },
        { request_range: { key: b('a') } },
      ],
      failure: [{ request_txn: { success: [{ request_delete_range: { key: b('t') } }] } }],
    },
  ],
  ['/v3/kv/compaction', { revision: 1 }],
  ['/v3/lease/grant', { TTL: 30, ID: 77 }],
  ['/v3/lease/revoke', { ID: 77 }],
  ['/v3/lease/keepalive', { ID: 77 }],
  ['/v3/lease/timetolive', { ID: 77, keys: true }],
  ['/v3/lease/leases', {}],
  ['/v3/cluster/member/list', {}],
  ['/v3/cluster/member/add', { peerURLs: ['http://127.0.0.1:9'], isLearner: true }],
  ['/v3/cluster/member/remove', { ID: '1' }],
  ['/v3/maintenance/status', {}],
];

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function randomValue(r: () => number, depth = 0): Json {
  const pick = Math.floor(r() * 12);
  switch (pick) {
    case 0:
      return null;
    case 1:
      return r() < 0.5;
    case 2:
      return Math.floor((r() - 0.5) * 2 ** 60);
    case 3:
      return (r() - 0.5) * 1e6;
    case 4:
      return String(Math.floor(r() * 1e20));
    case 5:
      return Buffer.from(
        Array.from({ length: Math.floor(r() * 12) }, () => Math.floor(r() * 256)),
      ).toString('base64');
    case 6:
      return String.fromCharCode(
        ...Array.from({ length: Math.floor(r() * 8) }, () => Math.floor(r() * 0x3000)),
      );
    case 7:
      return depth > 3
        ? []
        : Array.from({ length: Math.floor(r() * 3) }, () => randomValue(r, depth + 1));
    case 8:
      return depth > 3
        ? {}
        : {
            [['key', 'request_put', 'x', 'ID'][Math.floor(r() * 4)] as string]: randomValue(
              r,
              depth + 1,
            ),
          };
    case 9:
      return ['NONE', 'DESCEND', 'VALUE', 'LEASE', 'EQUAL', 'BOGUS'][Math.floor(r() * 6)] as string;
    case 10:
      return -1;
    default:
      return '';
  }
}

/** Replaces, deletes or adds a field somewhere in the body. */
function mutateJson(v: Json, r: () => number): Json {
  if (Array.isArray(v)) {
    if (v.length === 0 || r() < 0.2) return [...v, randomValue(r)];
    const i = Math.floor(r() * v.length);
    return v.map((x, j) => (j === i ? mutateJson(x, r) : x));
  }
  if (v === null || typeof v !== 'object') return randomValue(r);
  const keys = Object.keys(v);
  const out = { ...v };
  const roll = r();
  if (keys.length === 0 || roll < 0.15)
    out[['key', 'limit', 'extra', 'TTL', 'success'][Math.floor(r() * 5)] as string] =
      randomValue(r);
  else if (roll < 0.3) delete out[keys[Math.floor(r() * keys.length)] as string];
  else {
    const k = keys[Math.floor(r() * keys.length)] as string;
    out[k] = r() < 0.5 ? mutateJson(out[k] as Json, r) : randomValue(r);
  }
  return out;
}

/** Damages the text itself: truncation, a flipped byte, an insertion. */
function mutateText(s: string, r: () => number): string {
  const i = Math.floor(r() * (s.length + 1));
  switch (Math.floor(r() * 4)) {
    case 0:
      return s.slice(0, i);
    case 1:
      return s.slice(0, i) + String.fromCharCode(Math.floor(r() * 128)) + s.slice(i + 1);
    case 2:
      return `${s.slice(0, i)}${['{', '}', '"', ',', '[', ':', '\\'][Math.floor(r() * 7)]}${s.slice(i)}`;
    default:
      return `${'['.repeat(Math.floor(r() * 3000))}${s}`;
  }
}

t.test(`random and mutated bodies never get a 5xx (seed ${SEED})`, async (t) => {
  t.comment(`replay with FUZZ_SEED=${SEED}`);
  const target = await startDouble(t.testdir());
  t.teardown(() => target.close());
  const r = rng(SEED);
  const statuses = new Map<number, number>();
  let bad = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const [path, base] = BASES[Math.floor(r() * BASES.length)] as [string, Json];
    let body = JSON.stringify(r() < 0.8 ? mutateJson(mutateJson(base, r), r) : base);
    if (r() < 0.25) body = mutateText(body, r);
    const res = await send(target.url, 'POST', path, body);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    let answer: { code?: unknown; message?: unknown; error?: unknown } | undefined;
    try {
      answer = JSON.parse(res.text.split('\n')[0] ?? '');
    } catch {}
    const wellFormed =
      answer !== undefined &&
      (res.status === 200 ||
        (typeof answer.code === 'number' && typeof answer.message === 'string'));
    if (res.status >= 500 || !wellFormed) {
      bad++;
      t.fail(`${path} ${body.slice(0, 300)} → ${res.status} ${res.text.slice(0, 300)}`);
    }
  }
  t.equal(bad, 0, `no 5xx and no malformed answer in ${ROUNDS} requests`);
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.ok(
    (statuses.get(200) ?? 0) > 0 && (statuses.get(400) ?? 0) > 0,
    'both answers and refusals occurred',
  );
  const put = await send(
    target.url,
    'POST',
    '/v3/kv/put',
    JSON.stringify({ key: b('after'), value: b('ok') }),
  );
  t.equal(put.status, 200, 'the server still takes writes');
  t.equal((await send(target.url, 'GET', '/health')).status, 200, 'and is healthy');
});
