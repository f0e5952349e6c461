/**
 * HashKV and the corruption check on three members with real LevelDB files. HashKV at a
 * revision is the same on every member that applied it, whatever their physical compaction
 * has done. Then one member's store is altered on disk (stopped, a value rewritten with
 * classic-level, restarted): with --experimental-initial-corrupt-check it refuses to start;
 * without, the leader's periodic check (--experimental-corrupt-check-time) raises CORRUPT
 * for it through Raft, and every member refuses writes with etcd's `corrupt cluster`.
 */
import { join } from 'node:path';
import { Level } from 'level';
import t from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import { storeDb } from '../../src/store/db.js';
import { decodeKv, encodeHistKey, encodeKv } from '../../src/store/encoding.js';
import { waitFor } from './helpers.js';
import { LocalCluster } from './local-cluster.js';

const enc = (s: string) => new Uint8Array(Buffer.from(s));

/** Rewrites the live value of `key` (its kv record and its newest hist record) on disk. */
async function rewriteValue(dataDir: string, key: string, value: string): Promise<void> {
  const level = new Level(join(dataDir, 'db'), { keyEncoding: 'view', valueEncoding: 'view' });
  await level.open();
  try {
    const db = storeDb(level, false);
    const raw = await db.kv.get(enc(key));
    if (raw === undefined) throw new Error(`${key} is not in the store`);
    const kv = decodeKv(enc(key), raw);
    const altered = encodeKv({ ...kv, value: enc(value) });
    await db.write(
      [
        { type: 'put', sublevel: db.kv, key: enc(key), value: altered },
        {
          type: 'put',
          sublevel: db.hist,
          key: encodeHistKey(enc(key), kv.modRevision),
          value: altered,
        },
      ],
      true,
    );
  } finally {
    await level.close();
  }
}

t.test('HashKV agrees on three members; a corrupted member is found', async (t) => {
  const root = t.testdir();
  const c = await LocalCluster.start(root, ['a', 'b', 'c'], { corruptCheckTime: '300ms' });
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  const lease = await leader.write({ op: 'leaseGrant', id: 0, ttl: 600 });
  const leaseId = lease.result.op === 'leaseGrant' ? lease.result.result.id : 0;
  for (let i = 0; i < 30; i++) {
    const m = c.running()[i % 3]!;
    await m.write({
      op: 'put',
      key: enc(`k${i % 10}`),
      value: enc(`v${i}`),
      lease: i % 4 === 0 ? leaseId : 0,
    });
  }
  await leader.write({ op: 'deleteRange', key: enc('k3') });
  const compactAt = leader.store.currentRevision - 10;
  await leader.write({ op: 'compact', revision: compactAt });
  await leader.write({ op: 'put', key: enc('k1'), value: enc('last') });
  await c.waitConverged();
  // Physical compaction runs in the background: let one member finish, not the others.
  await leader.store.compactionIdle();
  const current = leader.store.currentRevision;
  for (const rev of [compactAt, compactAt + 4, current]) {
    const hashes = await Promise.all(c.running().map((m) => m.maintenance.hashKV(rev)));
    t.equal(
      new Set(hashes.map((h) => h.hash)).size,
      1,
      `one hash at revision ${rev} on every member`,
    );
    t.same(new Set(hashes.map((h) => h.revision)), new Set([rev]));
  }
  const all = await Promise.all(c.running().map((m) => m.maintenance.hashKV(0)));
  t.equal(new Set(all.map((h) => h.hash)).size, 1, 'and at the current revision');
  const before = (await leader.maintenance.hashKV(compactAt + 4)).hash;
  t.not(
    before,
    (await leader.maintenance.hashKV(current)).hash,
    'different revisions, different hashes',
  );
  await t.rejects(leader.maintenance.hashKV(compactAt - 1), { code: 'ERR_COMPACTED' });

  // Corrupt a follower's store on disk.
  const victim = [...c.nodes.values()].find((n) => n.member !== leader)!;
  const victimId = String(victim.member!.id);
  await c.stopNode(victim.name);
  await rewriteValue(victim.config.dataDir, 'k5', 'not what was written');

  victim.config = { ...victim.config, initialCorruptCheck: true };
  const refused = await c.startNode(victim.name).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(isEtceteraError(refused, 'ERR_PEER_HASH_MISMATCH'), `refused to start: ${String(refused)}`);
  t.match(
    String((refused as Error).message),
    /found data inconsistency with peers: member \d+ at revision \d+/,
  );
  t.equal(victim.member, undefined);

  victim.config = { ...victim.config, initialCorruptCheck: false };
  await c.startNode(victim.name);
  await waitFor(
    'the leader to raise CORRUPT for the altered member',
    () => c.running().every((m) => m.store.alarms().some((a) => a.alarm === 'CORRUPT')),
    15_000,
  );
  for (const m of c.running())
    t.same(
      m.store.alarms(),
      [{ memberId: victimId, alarm: 'CORRUPT' }],
      `${m.config.name} holds the alarm`,
    );
  const index = leader.store.appliedIndex;
  await new Promise((r) => setTimeout(r, 1500));
  t.equal(leader.store.appliedIndex, index, 'later checks do not propose the raised alarm again');
  const w = await c
    .member('a')
    .write({ op: 'put', key: enc('x'), value: enc('y') })
    .catch((e: unknown) => e);
  t.ok(isEtceteraError(w, 'ERR_CORRUPT_CLUSTER'), `writes are refused: ${String(w)}`);
  const read = await c.member('a').range({ key: enc('k1') });
  t.equal(Buffer.from(read.result.kvs[0]!.value).toString(), 'last', 'reads still work');
  const health = await fetch(new URL('/health', c.member('a').clientUrls[0]!));
  t.same(await health.json(), { health: 'false', reason: 'ALARM CORRUPT' });
});

t.test('the peer hash endpoint answers members only', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a']);
  t.teardown(() => c.close());
  await c.waitLeader();
  const m = c.member('a');
  const url = new URL('/hashkv?revision=0', m.peerUrls[0]!);
  t.equal((await fetch(url)).status, 403, 'no member ID: refused');
  const forged = { 'x-etcetera-member-id': '12345', 'x-etcetera-cluster-id': m.registry.clusterId };
  t.equal(
    (await fetch(url, { headers: forged })).status,
    403,
    'an ID that is not a member: refused',
  );
  const wrongCluster = { 'x-etcetera-member-id': String(m.id), 'x-etcetera-cluster-id': '1' };
  t.equal((await fetch(url, { headers: wrongCluster })).status, 403, 'another cluster: refused');
  const ok = await fetch(url, {
    headers: {
      'x-etcetera-member-id': String(m.id),
      'x-etcetera-cluster-id': m.registry.clusterId,
    },
  });
  t.equal(ok.status, 200);
  t.equal(((await ok.json()) as { hash: number }).hash, (await m.maintenance.hashKV(0)).hash);
});
