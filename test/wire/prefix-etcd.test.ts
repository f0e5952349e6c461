/**
 * prefixEnd as range_end, asked of the servers themselves: over etcd's JSON API a range from
 * `p` to `prefixEnd(p)` returns exactly the keys starting with `p`, and where there is no end
 * (the empty key, a prefix of only 0xff bytes) the "\0" it returns reads as "every key >= p".
 * The same requests go to a real etcd 3.4 (when installed) and to an etcetera member, and both
 * must answer as the model says.
 */
import t, { type Test } from 'tap';
import { prefixEnd, toBase64 } from '../../src/wire/bytes.js';
import { etcdUnavailable, startEtcd, startMember, type Target } from '../api/servers.js';

const KEYS = [
  [0x00],
  [0x61],
  [0x61, 0x00],
  [0x61, 0xfe],
  [0x61, 0xfe, 0xff],
  [0x61, 0xff],
  [0x61, 0xff, 0x00],
  [0x61, 0xff, 0xff],
  [0x62],
  [0xfe, 0xff],
  [0xff],
  [0xff, 0x00],
  [0xff, 0xff],
  [0xff, 0xff, 0xff, 0x01],
].map((k) => Uint8Array.from(k));
const PREFIXES = [
  [],
  [0x61],
  [0x61, 0xfe],
  [0x61, 0xff],
  [0x61, 0xff, 0xff],
  [0xfe],
  [0xff],
  [0xff, 0xff],
].map((p) => Uint8Array.from(p));

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex') || '(empty)';
const cmp = (a: Uint8Array, b: Uint8Array) => Buffer.compare(a, b);

async function post(url: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) });
  const json = (await r.json()) as Record<string, unknown>;
  if (r.status !== 200) throw new Error(`${path}: HTTP ${r.status} ${JSON.stringify(json)}`);
  return json;
}

/** What a range from p to prefixEnd(p) must hold: every key with the prefix, or every key >= p. */
function expected(p: Uint8Array): string[] {
  const open = p.every((b) => b === 0xff);
  return KEYS.filter((k) =>
    open
      ? cmp(k, p.length === 0 ? Uint8Array.of(0) : p) >= 0
      : k.length >= p.length && cmp(k.subarray(0, p.length), p) === 0,
  ).map(hex);
}

async function check(t: Test, target: Target): Promise<void> {
  for (const k of KEYS) await post(target.url, '/v3/kv/put', { key: toBase64(k), value: 'eA==' });
  for (const p of PREFIXES) {
    // etcd's empty key is "\0" in a range request (the smallest key).
    const key = p.length === 0 ? Uint8Array.of(0) : p;
    const r = await post(target.url, '/v3/kv/range', {
      key: toBase64(key),
      range_end: toBase64(prefixEnd(p)),
      keys_only: true,
    });
    const got = ((r.kvs as { key: string }[] | undefined) ?? []).map((kv) =>
      hex(Buffer.from(kv.key, 'base64')),
    );
    t.same(got, expected(p), `${target.name}: prefix ${hex(p)} → range_end ${hex(prefixEnd(p))}`);
  }
}

t.test('an etcetera member reads prefixEnd as etcd does', async (t) => {
  const m = await startMember(t.testdir());
  t.teardown(() => m.close());
  await check(t, m);
});

const skip = etcdUnavailable();
t.test('etcd 3.4 reads prefixEnd so', { skip: skip ?? false }, async (t) => {
  const etcd = await startEtcd(t.testdir());
  t.teardown(() => etcd.close());
  await check(t, etcd);
});
