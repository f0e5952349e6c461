import t from 'tap';
import { open } from '../../src/store/index.js';
t.test('smoke', async (t) => {
  const dir = t.testdir();
  const s = await open({ dir });
  const seen: number[] = [];
  s.subscribe((b) => seen.push(b.revision));
  t.equal(s.currentRevision, 1);
  const p = await s.put('a', '1');
  t.equal(p.revision, 2);
  await s.put('b', '2');
  const r = await s.txn({
    compare: [{ key: Buffer.from('a'), target: 'VERSION', result: 'EQUAL', version: 1 }],
    success: [
      { type: 'range', request: { key: Buffer.from('a') } },
      { type: 'put', request: { key: Buffer.from('c'), value: Buffer.from('3'), prevKv: true } },
    ],
    failure: [],
  });
  console.log(JSON.stringify(r));
  const all = await s.range({ key: Buffer.from([0]), rangeEnd: Buffer.from([0]) });
  console.log(
    all.kvs.map((k) => Buffer.from(k.key).toString()),
    all.revision,
    all.count,
  );
  const old = await s.range({ key: Buffer.from('a'), rangeEnd: Buffer.from([0]), revision: 3 });
  console.log(
    old.kvs.map((k) => Buffer.from(k.key).toString()),
    old.revision,
  );
  await s.delete('a', { prefix: true });
  for await (const b of s.history(1 as never, {
    key: Buffer.from([0]),
    rangeEnd: Buffer.from([0]),
  }))
    console.log(
      b.revision,
      b.events.map(
        (e) => e.type + ':' + Buffer.from(e.kv.key) + ':' + (e.prevKv ? e.prevKv.modRevision : '-'),
      ),
    );
  await s.compact(4);
  await s.compactionIdle();
  await t.rejects(s.range({ key: Buffer.from('a'), revision: 3 }), { code: 'ERR_COMPACTED' });
  console.log(
    (await s.range({ key: Buffer.from([0]), rangeEnd: Buffer.from([0]), revision: 4 })).kvs.length,
  );
  await s.close();
  const s2 = await open({ dir });
  t.equal(s2.currentRevision, 5);
  t.equal(s2.compactRevision, 4);
  t.same(seen, [2, 3, 4, 5]);
  await s2.close();
});
