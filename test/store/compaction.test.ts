/**
 * Compaction: reads at or above the compacted revision answer exactly as before, reads and
 * history below it fail with the compacted revision, and the physical pass removes exactly
 * the unreachable versions.
 */
import { Level } from 'level';
import t from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import type { RangeResult, Revision } from '../../src/store/index.js';
import { open } from '../../src/store/index.js';

const ALL = { key: Buffer.from([0]), rangeEnd: Buffer.from([0]) };

async function countSublevel(dir: string, name: string): Promise<number> {
  const db = new Level(dir, { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open();
  const sub = db
    .sublevel('mvcc', { keyEncoding: 'view', valueEncoding: 'view' })
    .sublevel(name, { keyEncoding: 'view', valueEncoding: 'view' });
  let n = 0;
  for await (const _ of sub.keys()) n++;
  await db.close();
  return n;
}

t.test('compaction keeps every read at or above the revision and drops the rest', async (t) => {
  const dir = t.testdir();
  const store = await open({ dir, leaseCheckIntervalMs: 0, compactionBatchSize: 3 });
  // a: 3 versions; b: 2 versions then deleted; c: created after the compaction point.
  await store.put('a', '1'); // 2
  await store.put('b', '1'); // 3
  await store.put('a', '2'); // 4
  await store.put('b', '2'); // 5
  await store.delete('b'); // 6
  await store.put('a', '3'); // 7
  await store.put('c', '1'); // 8
  await store.put('a', '4'); // 9
  const before = new Map<number, RangeResult>();
  for (let rev = 1; rev <= 9; rev++) before.set(rev, await store.range({ ...ALL, revision: rev }));

  await store.compact(7);
  await store.compactionIdle();
  t.equal(store.compactRevision, 7);
  t.equal(store.compactionDoneRevision, 7);
  for (let rev = 7; rev <= 9; rev++) {
    const after = await store.range({ ...ALL, revision: rev });
    t.same(
      { ...after, revision: 0 },
      { ...before.get(rev), revision: 0 },
      `read at ${rev} unchanged`,
    );
  }
  for (const rev of [1, 6]) {
    const err = await store.range({ ...ALL, revision: rev }).catch((e) => e);
    t.ok(isEtceteraError(err, 'ERR_COMPACTED'), `read at ${rev} is compacted`);
    t.equal(err.details.compactRevision, 7);
  }
  // History: from the compacted revision itself works, below it does not.
  const batches: number[] = [];
  for await (const b of store.history(7 as Revision, ALL)) batches.push(b.revision);
  t.same(batches, [7, 8, 9]);
  const err = await (async () => {
    for await (const _ of store.history(6 as Revision, ALL)) {
    }
  })().catch((e) => e);
  t.ok(isEtceteraError(err, 'ERR_COMPACTED'), 'history below the compacted revision fails');
  // A second compaction at or below the first fails; above the current revision too.
  await t.rejects(store.compact(7), { code: 'ERR_COMPACTED' });
  await t.rejects(store.compact(99), { code: 'ERR_FUTURE_REV' });
  await store.close();

  // Physically: a keeps @7 (newest <= 7) and @9; b's versions and tombstone are gone; c @8.
  t.equal(await countSublevel(dir, 'hist'), 3, 'hist holds exactly the reachable versions');
  t.equal(await countSublevel(dir, 'rev'), 3, 'change records below 7 are gone');

  const reopened = await open({ dir, leaseCheckIntervalMs: 0 });
  t.equal(reopened.compactRevision, 7);
  t.same(
    (await reopened.range({ ...ALL, revision: 7 })).kvs.map((kv) => Buffer.from(kv.key).toString()),
    ['a'],
  );
  await reopened.close();
});

t.test('a compaction left unfinished is finished on reopen', async (t) => {
  const dir = t.testdir();
  const store = await open({ dir, leaseCheckIntervalMs: 0 });
  for (let i = 0; i < 10; i++) await store.put('k', String(i));
  await store.close();
  // Simulate a crash after the compaction was applied but before the physical pass ran: the
  // meta record says compacted to 8, and nothing says the pass finished.
  const db = new Level(dir, { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open();
  const meta = db
    .sublevel<Uint8Array, Uint8Array>('mvcc', { keyEncoding: 'view', valueEncoding: 'view' })
    .sublevel<Uint8Array, Uint8Array>('meta', { keyEncoding: 'view', valueEncoding: 'view' });
  const eight = new Uint8Array(8);
  eight[7] = 8;
  await meta.put(new Uint8Array(Buffer.from('compact')), eight);
  await db.close();
  t.equal(await countSublevel(dir, 'hist'), 10);

  const reopened = await open({ dir, leaseCheckIntervalMs: 0 });
  await reopened.compactionIdle();
  t.equal(reopened.compactionDoneRevision, 8);
  await reopened.close();
  t.equal(await countSublevel(dir, 'hist'), 4, 'versions @8..@11 remain');
});

t.test(
  'history from exactly the compacted revision answers as etcd, before and after the physical pass',
  async (t) => {
    const store = await open({ dir: t.testdir(), leaseCheckIntervalMs: 0 });
    t.teardown(() => store.close());
    await store.put('k1', '1'); // 2
    await store.put('k2', '1'); // 3
    await store.put('k2', '2'); // 4
    await store.delete('k1'); // 5
    await store.put('k3', '3'); // 6
    const replay = async (from: number) => {
      const out: string[] = [];
      for await (const b of store.history(from as Revision, ALL)) {
        for (const e of b.events)
          out.push(
            `${b.revision}:${e.type}:${Buffer.from(e.kv.key)}:${e.prevKv ? e.prevKv.modRevision : '-'}`,
          );
      }
      return out;
    };
    await store.compact(4);
    // Whether or not the physical pass has run, a PUT at the compacted revision has no prevKv.
    const early = await replay(4);
    await store.compactionIdle();
    t.same(early, ['4:PUT:k2:-', '5:DELETE:k1:2', '6:PUT:k3:-']);
    t.same(await replay(4), early, 'the same after the physical pass');
    await store.compact(5);
    await store.compactionIdle();
    t.same(
      await replay(5),
      ['6:PUT:k3:-'],
      'a DELETE at the compacted revision is gone, as in etcd',
    );
  },
);
