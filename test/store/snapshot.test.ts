/**
 * Raft snapshots of the store: export from one store, restore into another (which had
 * different data), and the two answer every read, history and lease question alike.
 */
import t from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import type { EmbeddedStore, Revision } from '../../src/store/index.js';
import { open } from '../../src/store/index.js';

const ALL = { key: Buffer.from([0]), rangeEnd: Buffer.from([0]) };

async function fingerprint(s: EmbeddedStore) {
  const ranges = [];
  for (let rev = s.compactRevision || 1; rev <= s.currentRevision; rev++)
    ranges.push(await s.range({ ...ALL, revision: rev }));
  const history = [];
  for await (const b of s.history(Math.max(1, s.compactRevision) as Revision, ALL)) history.push(b);
  return {
    ranges,
    history,
    current: s.currentRevision,
    compact: s.compactRevision,
    applied: s.appliedIndex,
    leases: s.leases(),
    leaseKeys: s.leases().map((id) => s.leaseTimeToLive(id, { keys: true }).keys),
  };
}

t.test('export then restore gives an identical store, and it stays usable', async (t) => {
  const dir = t.testdir();
  const a = await open({ dir: `${dir}/a`, leaseCheckIntervalMs: 0 });
  const b = await open({ dir: `${dir}/b`, leaseCheckIntervalMs: 0 });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const lease = await a.leaseGrant(60);
  for (let i = 0; i < 20; i++)
    await a.put(`k${i % 7}`, `v${i}`, i % 3 === 0 ? { lease: lease.id } : {});
  await a.delete('k1');
  await a.compact(10);
  await a.compactionIdle();
  await a.put('after', 'x');
  // b has its own, different history that the restore must erase.
  for (let i = 0; i < 30; i++) await b.put(`other${i}`, 'y');
  const resets: number[] = [];
  b.onReset((rev) => resets.push(rev));

  const blob = await a.exportSnapshot();
  await b.restoreSnapshot(blob);
  t.same(resets, [a.currentRevision], 'reset listeners hear the new revision');
  t.same(await fingerprint(b), await fingerprint(a), 'identical reads, history, revisions, leases');

  // Both continue identically.
  await a.put('next', '1', { prevKv: true });
  await b.put('next', '1', { prevKv: true });
  await a.leaseRevoke(lease.id);
  await b.leaseRevoke(lease.id);
  t.same(await fingerprint(b), await fingerprint(a), 'identical after further writes');

  const bad = await b.restoreSnapshot(new Uint8Array([1, 2, 3])).catch((e) => e);
  t.ok(isEtceteraError(bad, 'ERR_CORRUPT'), 'a blob that is not a snapshot is refused');
});
