/**
 * --quota-backend-bytes on a real member (real LevelDB files, real HTTP and gRPC): writes
 * until the database passes the quota raise NOSPACE through Raft; while it is raised, puts,
 * txns with puts and lease grants fail with etcd's error and code while reads, deletes,
 * compaction and defragment work; `alarm disarm` clears it and the next put raises it again
 * while the database is still over; once space is reclaimed and the alarm disarmed, writes
 * work. The real etcdctl lists and disarms the alarm as it does against etcd (when installed).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { runClientCommand } from '../../src/cli/client.js';
import { startSingle, waitFor } from './helpers.js';

type Json = Record<string, unknown>;
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

function etcdctlUnavailable(): string | undefined {
  const r = spawnSync('etcdctl', ['version'], { encoding: 'utf8' });
  return r.error
    ? `etcdctl is not installed (${(r.error as NodeJS.ErrnoException).code})`
    : undefined;
}

function etcdctl(endpoint: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn('etcdctl', [...args, `--endpoints=${endpoint}`], {
      env: { ...process.env, ETCDCTL_API: '3' },
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? -1, out }));
  });
}

t.test('NOSPACE: raised over the quota, what it refuses, disarm', async (t) => {
  const QUOTA = 1024 * 1024;
  const m = await startSingle(t.testdir(), { quotaBackendBytes: QUOTA, snapshotCount: 5 });
  t.teardown(() => m.stop());
  await waitFor('leader', () => m.health().health);
  const url = m.clientUrls[0]!.href.replace(/\/$/, '');
  const post = async (path: string, body: Json) => {
    const res = await fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const id = String(m.id);

  let refused: { status: number; body: Json } | undefined;
  let acked = 0;
  for (let i = 0; i < 400 && refused === undefined; i++) {
    const r = await post('/v3/kv/put', {
      key: b64(`big/${i}`),
      value: b64(randomBytes(16 * 1024)),
    });
    if (r.status === 200) acked++;
    else refused = r;
  }
  t.ok(acked > 5, `${acked} puts of 16 KiB were accepted before the quota`);
  t.same(
    refused,
    {
      status: 429,
      body: {
        error: 'etcdserver: mvcc: database space exceeded',
        message: 'etcdserver: mvcc: database space exceeded',
        code: 8,
      },
    },
    'the put over the quota is refused as etcd refuses it',
  );
  t.same(
    (await post('/v3/maintenance/alarm', { action: 'GET' })).body,
    { alarms: [{ memberID: id, alarm: 'NOSPACE' }] },
    'the member raised NOSPACE for itself',
  );
  t.match((await post('/v3/maintenance/status', {})).body, {
    errors: [`memberID:${id} alarm:NOSPACE `],
  });
  const health = await fetch(`${url}/health`);
  t.same(
    { status: health.status, body: await health.json() },
    { status: 503, body: { health: 'false', reason: 'ALARM NOSPACE' } },
  );

  // What NOSPACE refuses and what it lets through.
  t.equal((await post('/v3/kv/put', { key: b64('small'), value: b64('x') })).body.code, 8);
  const txnPut = { success: [{ requestPut: { key: b64('t'), value: b64('1') } }] };
  t.equal((await post('/v3/kv/txn', txnPut)).body.code, 8, 'a txn with a put');
  t.equal((await post('/v3/lease/grant', { TTL: 60 })).body.code, 8, 'a lease grant');
  const range = await post('/v3/kv/range', { key: b64('big/0') });
  t.equal(range.status, 200, 'range works');
  const txnRead = await post('/v3/kv/txn', { success: [{ requestRange: { key: b64('big/0') } }] });
  t.equal(txnRead.status, 200, 'a read-only txn works');
  const del = await post('/v3/kv/deleterange', { key: b64('big/'), range_end: b64('big0') });
  t.equal(del.status, 200, 'delete works');
  t.equal(Number(del.body.deleted), acked);
  const rev = Number((del.body.header as Json).revision);
  t.equal((await post('/v3/kv/compaction', { revision: rev })).status, 200, 'compaction works');
  await m.store.compactionIdle();
  // Deletes of nothing are entries too: they let Raft snapshot the now small store.
  for (let i = 0; i < 12; i++) await post('/v3/kv/deleterange', { key: b64(`none/${i}`) });

  // Disarmed while still over: the next put raises it again.
  t.same(
    (await post('/v3/maintenance/alarm', { action: 'DEACTIVATE', memberID: id, alarm: 'NOSPACE' }))
      .body,
    {
      alarms: [{ memberID: id, alarm: 'NOSPACE' }],
    },
  );
  t.same(m.store.alarms(), [], 'disarmed');
  const before = await m.quota.sample();
  t.ok(before >= QUOTA, `deleted and compacted, LevelDB still holds ${before} bytes`);
  t.equal((await post('/v3/kv/put', { key: b64('small'), value: b64('x') })).body.code, 8);
  t.same(m.store.alarms(), [{ memberId: id, alarm: 'NOSPACE' }], 'raised again while over');

  const defrag = await post('/v3/maintenance/defragment', {});
  t.same(defrag, { status: 200, body: {} }, 'defragment works under NOSPACE');
  const after = await m.quota.sample();
  t.ok(
    after < QUOTA,
    `after compaction and defragment the database is ${after} bytes, under ${QUOTA}`,
  );

  // `etcetera alarm disarm`, then writes work.
  const active = m.store.alarms().map((a) => `memberID:${a.memberId} alarm:${a.alarm} \n`);
  let out = '';
  const code = await runClientCommand(['alarm', 'disarm', `--endpoints=${url}`], {
    stdout: (s) => {
      out += s;
    },
    stderr: () => undefined,
    readStdin: async () => '',
  });
  t.equal(code, 0);
  t.equal(out, active.join(''), 'it prints the alarms it cleared, as etcdctl');
  t.same(m.store.alarms(), []);
  const ok = await post('/v3/kv/put', { key: b64('small'), value: b64('x') });
  t.equal(ok.status, 200, 'a put works once space is reclaimed and the alarm disarmed');
});

const skipEtcdctl = etcdctlUnavailable() ?? false;

t.test(
  'etcdctl alarm list and disarm print what they print against etcd',
  { skip: skipEtcdctl },
  async (t) => {
    const m = await startSingle(t.testdir());
    t.teardown(() => m.stop());
    await waitFor('leader', () => m.health().health);
    const endpoint = m.clientUrls[0]!.host;
    const id = String(m.id);
    t.same(await etcdctl(endpoint, ['alarm', 'list']), { code: 0, out: '' });
    await m.maintenance.alarm({ action: 'ACTIVATE', memberId: id, alarm: 'NOSPACE' });
    await m.maintenance.alarm({ action: 'ACTIVATE', memberId: '5', alarm: 'CORRUPT' });
    const listed = `memberID:5 alarm:CORRUPT \nmemberID:${id} alarm:NOSPACE \n`;
    t.same(await etcdctl(endpoint, ['alarm', 'list']), { code: 0, out: listed });
    t.same(
      await etcdctl(endpoint, ['alarm', 'disarm']),
      { code: 0, out: listed },
      'disarm prints what it cleared',
    );
    t.same(await etcdctl(endpoint, ['alarm', 'list']), { code: 0, out: '' });
    t.same(m.store.alarms(), []);
  },
);

t.test('bad alarm requests get a clear error and change nothing', async (t) => {
  const m = await startSingle(t.testdir());
  t.teardown(() => m.stop());
  await waitFor('leader', () => m.health().health);
  const url = m.clientUrls[0]!.href.replace(/\/$/, '');
  const post = async (body: unknown) => {
    const res = await fetch(`${url}/v3/maintenance/alarm`, {
      method: 'POST',
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const bad = [
    { action: 'RAISE', memberID: '1', alarm: 'NOSPACE' },
    { action: 'ACTIVATE', memberID: '-1', alarm: 'NOSPACE' },
    { action: 'ACTIVATE', memberID: '18446744073709551616', alarm: 'NOSPACE' },
    { action: 'ACTIVATE', memberID: '1', alarm: 'FULL' },
    { action: 'ACTIVATE', memberID: '1' },
    { action: 'ACTIVATE', memberID: '1', alarm: 'NOSPACE', extra: true },
  ];
  for (const body of bad) {
    const r = await post(body);
    t.equal(r.status, 400, `${JSON.stringify(body)}: ${String(r.body.message)}`);
  }
  t.same(m.store.alarms(), []);
  t.same((await post({})).body, {}, 'GET with no alarms: {} as etcd answers');
  t.same(
    (await post({ action: 'DEACTIVATE', memberID: '1', alarm: 'CORRUPT' })).body,
    {},
    'clearing an absent alarm',
  );
});
