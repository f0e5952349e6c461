/**
 * etcd's gRPC API with @grpc/grpc-js as a raw client: status codes and messages as etcd sends
 * them, one implementation behind the gRPC and JSON faces, and the Watch stream (many watches,
 * client-chosen ids, duplicates, cancel, progress, compaction, filters, prev_kv, fragments).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import grpc from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import type { Cacher } from '../../../src/watchcache/cacher.js';
import { startSingle } from '../../server/helpers.js';
import { b, type Msg, RawClient, s } from './client.js';

const KV = (m: string) => `/etcdserverpb.KV/${m}`;
const MAX_REQUEST = 64 * 1024;

async function setup(t: Test) {
  const m = await startSingle(mkdtempSync(join(tmpdir(), 'grpc-api-')), {
    maxRequestBytes: MAX_REQUEST,
  });
  const c = new RawClient(m.clientUrls[0]!.host);
  t.teardown(async () => {
    c.close();
    await m.stop();
  });
  return { m, c, url: m.clientUrls[0]!.href.replace(/\/$/, '') };
}

type GrpcError = Error & { code: number; details: string };
async function refusal(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await p;
  } catch (e) {
    const g = e as GrpcError;
    return { code: g.code, details: g.details };
  }
  throw new Error('the call succeeded');
}

t.test('statuses and messages as etcd sends them', async (t) => {
  const { c } = await setup(t);
  await c.call(KV('Put'), { key: b('a'), value: b('1') });
  await c.call(KV('Put'), { key: b('a'), value: b('2') });
  await c.call(KV('Put'), { key: b('a'), value: b('3') });
  await c.call(KV('Compact'), { revision: 3 });
  t.same(await refusal(c.call(KV('Range'), { key: b('a'), revision: 2 })), {
    code: grpc.status.OUT_OF_RANGE,
    details: 'etcdserver: mvcc: required revision has been compacted',
  });
  t.same(await refusal(c.call(KV('Range'), { key: b('a'), revision: 99 })), {
    code: grpc.status.OUT_OF_RANGE,
    details: 'etcdserver: mvcc: required revision is a future revision',
  });
  t.same(await refusal(c.call(KV('Put'), { key: b(''), value: b('x') })), {
    code: grpc.status.INVALID_ARGUMENT,
    details: 'etcdserver: key is not provided',
  });
  const dup = {
    success: [
      { request_put: { key: b('k'), value: b('1') } },
      { request_put: { key: b('k'), value: b('2') } },
    ],
  };
  t.same(await refusal(c.call(KV('Txn'), dup)), {
    code: grpc.status.INVALID_ARGUMENT,
    details: 'etcdserver: duplicate key given in txn request',
  });
  t.same(await refusal(c.call('/etcdserverpb.Lease/LeaseRevoke', { ID: 12345 })), {
    code: grpc.status.NOT_FOUND,
    details: 'etcdserver: requested lease not found',
  });
  t.same(
    await refusal(c.call('/etcdserverpb.Auth/Authenticate', { name: 'root', password: 'x' })),
    {
      code: grpc.status.FAILED_PRECONDITION,
      details: 'etcdserver: authentication is not enabled',
    },
  );
  t.same(await refusal(c.call('/etcdserverpb.Auth/UserGet', { name: 'root' })), {
    code: grpc.status.FAILED_PRECONDITION,
    details: 'etcdserver: user name not found',
  });
  t.same((await c.call('/etcdserverpb.Auth/UserList', {})).users, undefined, 'no users');
  t.same(await refusal(c.call('/etcdserverpb.Maintenance/MoveLeader', { targetID: 42 })), {
    code: grpc.status.FAILED_PRECONDITION,
    details: 'etcdserver: bad leader transferee',
  });
  t.same(await refusal(c.call('/etcdserverpb.Cluster/MemberUpdate', { ID: 1, peerURLs: [] })), {
    code: grpc.status.NOT_FOUND,
    details: 'etcdserver: member not found',
  });
  const alarm = await refusal(
    c.call('/etcdserverpb.Maintenance/Alarm', { action: 'ACTIVATE', alarm: 'NONE' }),
  );
  t.equal(alarm.code, grpc.status.INVALID_ARGUMENT, 'ACTIVATE needs an alarm type');
  t.same((await c.call('/etcdserverpb.Maintenance/Alarm', {})).alarms, undefined, 'no alarms');
  const raised = await c.call('/etcdserverpb.Maintenance/Alarm', {
    action: 'ACTIVATE',
    memberID: 7,
    alarm: 'CORRUPT',
  });
  t.same(
    raised.alarms.map((a: Msg) => [String(a.memberID), a.alarm]),
    [['7', 'CORRUPT']],
    'ACTIVATE answers the alarm raised',
  );
  t.same(await refusal(c.call(KV('Put'), { key: b('a'), value: b('no') })), {
    code: grpc.status.DATA_LOSS,
    details: 'etcdserver: corrupt cluster',
  });
  const cleared = await c.call('/etcdserverpb.Maintenance/Alarm', {
    action: 'DEACTIVATE',
    memberID: 7,
    alarm: 'CORRUPT',
  });
  t.equal(cleared.alarms.length, 1, 'DEACTIVATE answers the alarm cleared');
  t.same((await c.call('/etcdserverpb.Maintenance/Alarm', {})).alarms, undefined, 'none left');
  // Nothing above changed the store: the revision is still that of the third put.
  t.equal((await c.call(KV('Range'), { key: b('a') })).header.revision, 4);
});

t.test(
  'MemberUpdate on both faces: the new peer URLs in every list, bad ones refused',
  async (t) => {
    const { c, url } = await setup(t);
    const id = (await c.call('/etcdserverpb.Cluster/MemberList', {})).members[0].ID as number;
    const upd = await c.call('/etcdserverpb.Cluster/MemberUpdate', {
      ID: id,
      peerURLs: ['http://127.0.0.1:7001', 'http://127.0.0.1:7002'],
    });
    t.same(upd.members[0].peerURLs, ['http://127.0.0.1:7001', 'http://127.0.0.1:7002']);
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Msg };
    };
    const listed = await post('/v3/cluster/member/list', {});
    t.same(listed.body.members[0].peerURLs, ['http://127.0.0.1:7001', 'http://127.0.0.1:7002']);
    const viaJson = await post('/v3/cluster/member/update', {
      ID: String(id),
      peerURLs: ['http://127.0.0.1:7003'],
    });
    t.equal(viaJson.status, 200);
    t.same(viaJson.body.members[0].peerURLs, ['http://127.0.0.1:7003']);
    for (const bad of [[], ['ftp://127.0.0.1:1'], ['http://127.0.0.1']]) {
      t.same(
        await refusal(c.call('/etcdserverpb.Cluster/MemberUpdate', { ID: id, peerURLs: bad })),
        {
          code: grpc.status.INVALID_ARGUMENT,
          details: 'etcdserver: given member URLs are invalid',
        },
        JSON.stringify(bad),
      );
    }
    const unknown = await post('/v3/cluster/member/update', {
      ID: '12',
      peerURLs: ['http://127.0.0.1:7004'],
    });
    t.equal(unknown.status, 404);
    t.match(unknown.body, { code: 5, message: 'etcdserver: member not found' });
    const after = await c.call('/etcdserverpb.Cluster/MemberList', {});
    t.same(after.members[0].peerURLs, ['http://127.0.0.1:7003'], 'refusals changed nothing');
  },
);

t.test('one implementation behind both faces', async (t) => {
  const { c, url } = await setup(t);
  const put = await c.call(KV('Put'), { key: b('k'), value: b('via grpc'), prev_kv: true });
  const json = (await (
    await fetch(`${url}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: 'aw==' }) })
  ).json()) as Msg;
  t.equal(Buffer.from(json.kvs[0].value, 'base64').toString(), 'via grpc');
  t.equal(Number(json.header.revision), put.header.revision);
  const txn = await c.call(KV('Txn'), {
    compare: [{ key: b('k'), target: 'VALUE', result: 'EQUAL', value: b('via grpc') }],
    success: [{ request_put: { key: b('k'), value: b('v2') } }, { request_range: { key: b('k') } }],
  });
  t.equal(txn.succeeded, true);
  t.equal(s(txn.responses[1].response_range.kvs[0].value), 'v2');
  // Nested txns decode through the same decoder: the innermost range sees the outer put.
  let deep: Msg = { success: [{ request_range: { key: b('k') } }] };
  for (let i = 0; i < 20; i++) deep = { success: [{ request_txn: deep }] };
  let r = await c.call(KV('Txn'), deep);
  for (let i = 0; i < 20; i++) r = r.responses[0].response_txn;
  t.equal(s(r.responses[0].response_range.kvs[0].value), 'v2');
});

t.test('many watches on one stream: ids, duplicates, filters, prev_kv, cancel', async (t) => {
  const { c } = await setup(t);
  const w = c.watch();
  t.teardown(() => w.end());
  w.send({ create_request: { key: b('a'), watch_id: 7 } });
  t.match(await w.next(), { watch_id: 7, created: true });
  w.send({ create_request: { key: b('p/'), range_end: b('p0'), watch_id: 9, prev_kv: true } });
  t.match(await w.next(), { watch_id: 9, created: true });
  w.send({ create_request: { key: b('p/'), range_end: b('p0'), filters: ['NOPUT'] } });
  const auto = await w.next();
  t.match(auto, { created: true });
  const autoId = auto.watch_id ?? 0;
  t.not(autoId, 7);
  t.not(autoId, 9);
  w.send({ create_request: { key: b('z'), watch_id: 7 } });
  t.match(await w.next(), {
    watch_id: -1,
    created: true,
    canceled: true,
    cancel_reason: 'mvcc: duplicate watch ID provided on the WatchStream',
  });

  await c.call(KV('Put'), { key: b('a'), value: b('1') });
  const ev7 = await w.next();
  t.equal(ev7.watch_id, 7);
  t.equal(s(ev7.events[0].kv.key), 'a');
  await c.call(KV('Put'), { key: b('p/x'), value: b('old') });
  await c.call(KV('Put'), { key: b('p/x'), value: b('new') });
  const first = await w.next();
  t.equal(first.watch_id, 9);
  t.equal(first.events[0].prev_kv, undefined, 'a created key has no previous value');
  const second = await w.next();
  t.equal(second.watch_id, 9);
  t.equal(s(second.events[0].prev_kv.value), 'old');
  await c.call(KV('DeleteRange'), { key: b('p/x') });
  const dels = [await w.next(), await w.next()];
  const byId = new Map(dels.map((d) => [d.watch_id ?? 0, d]));
  t.equal(byId.get(autoId)?.events[0].type, 'DELETE', 'the NOPUT watch sees only the delete');
  t.equal(s(byId.get(9)?.events[0].prev_kv.value), 'new');

  w.send({ cancel_request: { watch_id: 9 } });
  t.match(await w.next(), { watch_id: 9, canceled: true });
  await c.call(KV('Put'), { key: b('p/y'), value: b('1') });
  await c.call(KV('Put'), { key: b('a'), value: b('2') });
  // The cancelled watch sends nothing more; the next response is watch 7's.
  t.equal((await w.next()).watch_id, 7);
});

t.test('progress, compaction, and watches from a past revision', async (t) => {
  const { c } = await setup(t);
  for (let i = 0; i < 5; i++) await c.call(KV('Put'), { key: b('h'), value: b(String(i)) });
  await c.call(KV('Compact'), { revision: 4 });
  const w = c.watch();
  t.teardown(() => w.end());
  w.send({ create_request: { key: b('h'), start_revision: 2, watch_id: 1 } });
  t.match(await w.next(), { watch_id: 1, created: true });
  t.match(await w.next(), { watch_id: 1, canceled: true, compact_revision: 4 });
  w.send({ create_request: { key: b('h'), start_revision: 4, watch_id: 2 } });
  t.match(await w.next(), { watch_id: 2, created: true });
  const replay = await w.until((m) => (m.events?.at(-1)?.kv.mod_revision ?? 0) >= 6);
  t.same(
    replay.flatMap((m) => m.events.map((e: Msg) => s(e.kv.value))),
    ['2', '3', '4'],
    'the history from revision 4 on',
  );
  w.send({ progress_request: {} });
  const progress = await w.next();
  t.equal(progress.watch_id, -1);
  t.equal(progress.header.revision, 6);
  t.equal(progress.events, undefined);
});

t.test('fragment: a huge revision split over several responses', async (t) => {
  const { c } = await setup(t);
  const value = Buffer.alloc(60 * 1024, 'v');
  for (let i = 0; i < 12; i++)
    await c.call(KV('Put'), { key: b(`f/${String(i).padStart(2, '0')}`), value });
  const w = c.watch();
  t.teardown(() => w.end());
  w.send({ create_request: { key: b('f/'), range_end: b('f0'), prev_kv: true, fragment: true } });
  t.match(await w.next(), { created: true });
  const whole = c.watch();
  t.teardown(() => whole.end());
  whole.send({ create_request: { key: b('f/'), range_end: b('f0'), prev_kv: true } });
  t.match(await whole.next(), { created: true });
  await c.call(KV('DeleteRange'), { key: b('f/'), range_end: b('f0'), prev_kv: true });
  const parts = await w.until((m) => m.fragment !== true);
  t.ok(parts.length > 1, `split into ${parts.length} responses`);
  t.ok(
    parts.slice(0, -1).every((m) => m.fragment === true),
    'all but the last say fragment',
  );
  const keys = parts.flatMap((m) => m.events.map((e: Msg) => s(e.kv.key)));
  t.same(
    keys,
    Array.from({ length: 12 }, (_, i) => `f/${String(i).padStart(2, '0')}`),
  );
  const one = await whole.next();
  t.equal(one.events.length, 12, 'without fragment: one response');
  t.equal(one.fragment, undefined);
});

/** What this member's watch cache counted of the protobuf format's encoding work. */
async function encodedParts(cache: Cacher): Promise<Record<'event' | 'head' | 'tail', number>> {
  const out = { event: 0, head: 0, tail: 0 };
  for (const v of (await cache.metrics.encodedParts.get()).values)
    if (v.labels.format === 'etcd-protobuf') out[v.labels.part as keyof typeof out] += v.value;
  return out;
}

t.test('serialize once: one encoding per batch and selection for every gRPC stream', async (t) => {
  const { c, m } = await setup(t);
  const streams = Array.from({ length: 20 }, () => c.watch());
  t.teardown(() => {
    for (const w of streams) w.end();
  });
  for (const [i, w] of streams.entries()) {
    // Half with prev_kv: two selections of the same batch.
    w.send({ create_request: { key: b('once'), watch_id: 100 + i, prev_kv: i % 2 === 0 } });
    t.match(await w.next(), { created: true, watch_id: 100 + i });
  }
  const before = await encodedParts(m.watchCache);
  await c.call(KV('Put'), { key: b('once'), value: b('x') });
  const got = await Promise.all(streams.map((w) => w.next()));
  t.same(
    got.map((m) => m.watch_id),
    streams.map((_, i) => 100 + i),
    'each stream gets its own watch_id spliced in',
  );
  t.ok(got.every((m) => s(m.events[0].kv.value) === 'x'));
  const after = await encodedParts(m.watchCache);
  t.equal(after.head - before.head, 1, 'one header for the batch');
  t.equal(after.tail - before.tail, 2, 'one events tail per selection');
  t.equal(after.event - before.event, 2, 'the event encoded once per variant');
});
