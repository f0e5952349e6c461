/**
 * When a batch's outcomes are released. Without sync and with answerBeforeWrite (a member:
 * its Raft log made the entries durable before apply), outcomes go as soon as the batch is
 * applied in memory, and the batch's write lands after; reads wait for that write, so a
 * read after an answer sees it. Otherwise (the standalone store with sync: its own write is
 * the durability), outcomes wait for the write, and so for the events it publishes.
 */
import t from 'tap';
import { Store } from '../../src/store/store.js';

const enc = (s: string) => new Uint8Array(Buffer.from(s));

for (const [sync, answerBeforeWrite] of [
  [false, true],
  [true, true],
  [false, false],
]) {
  const early = !sync && answerBeforeWrite;
  t.test(`sync ${sync}, answerBeforeWrite ${answerBeforeWrite}`, async (t) => {
    const store = await Store.open({ dir: t.testdir(), sync, answerBeforeWrite });
    t.teardown(() => store.close());
    const order: string[] = [];
    store.subscribe((b) => order.push(`published ${b.revision}`));
    const outcomes = await store.applyBatch([
      { command: { op: 'put', key: enc('a'), value: enc('1') }, index: 1 },
      { command: { op: 'put', key: enc('b'), value: enc('2') }, index: 2 },
    ]);
    order.push('answered');
    t.same(
      outcomes.map((o) => o.ok && o.result.op),
      ['put', 'put'],
    );
    // A read issued right after the answer sees the batch (it waits for the write).
    const r = await store.range({ key: enc('a'), rangeEnd: enc('c') });
    t.same(
      r.kvs.map((kv) => Buffer.from(kv.value).toString()),
      ['1', '2'],
    );
    t.equal(r.revision, 3);
    t.equal(store.currentRevision, 3, 'visible once written');
    t.same(
      order,
      early
        ? ['answered', 'published 2', 'published 3']
        : ['published 2', 'published 3', 'answered'],
      early ? 'the answer goes before the write lands' : 'the answer waits for the write',
    );
    // The next batch applies on top of the written one.
    const next = await store.applyBatch([
      { command: { op: 'put', key: enc('a'), value: enc('3'), prevKv: true }, index: 3 },
    ]);
    const o = next[0];
    t.ok(o?.ok && o.result.op === 'put' && o.result.result.prevKv !== undefined);
    if (o?.ok && o.result.op === 'put')
      t.equal(Buffer.from(o.result.result.prevKv!.value).toString(), '1', 'prevKv from disk');
  });
}
