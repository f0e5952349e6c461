/**
 * A range over 100,000 keys streams from LevelDB in bounded chunks, from one snapshot, while
 * writes keep being applied; historical reads keep seeing their revision.
 */
import t from 'tap';
import type { RequestOp } from '../../src/store/index.js';
import { open, prefixEnd } from '../../src/store/index.js';
import { READ_CHUNK } from '../../src/store/reader.js';

const N = 100_000;

t.test('100k keys: streamed in chunks from a snapshot, writes not blocked', async (t) => {
  const store = await open({
    dir: t.testdir(),
    leaseCheckIntervalMs: 0,
    sync: false,
    maxTxnOps: 1000,
  });
  t.teardown(() => store.close());
  const key = (i: number) => Buffer.from(`k/${String(i).padStart(6, '0')}`);
  for (let start = 0; start < N; start += 1000) {
    const success: RequestOp[] = [];
    for (let i = start; i < start + 1000; i++)
      success.push({ type: 'put', request: { key: key(i), value: Buffer.from(`v${i}`) } });
    await store.txn({ compare: [], success, failure: [] });
  }
  const revBefore = store.currentRevision;
  const prefix = Buffer.from('k/');
  const stream = store.rangeStream({ key: prefix, rangeEnd: prefixEnd(prefix) });

  let seen = 0;
  let maxChunk = 0;
  let lastKey = Buffer.alloc(0);
  let ordered = true;
  let writesDuringStream = 0;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    maxChunk = Math.max(maxChunk, chunk.length);
    for (const kv of chunk) {
      if (Buffer.compare(lastKey, kv.key) >= 0) ordered = false;
      lastKey = Buffer.from(kv.key);
      seen++;
    }
    // A write (one that changes a key already streamed and one that adds a key at the end)
    // completes while the stream is open.
    if (chunks % 50 === 1) {
      await store.put(key(0), 'changed');
      await store.put('k/zzzzzz', 'late');
      writesDuringStream++;
    }
  }
  t.equal(seen, N, 'every key streamed once; the late key is not in the snapshot');
  t.ok(ordered, 'in key order');
  t.ok(maxChunk <= READ_CHUNK, `chunks are bounded (${maxChunk} <= ${READ_CHUNK})`);
  t.ok(writesDuringStream >= 4, 'writes completed while the stream was open');
  t.equal(
    store.currentRevision,
    revBefore + 2 * writesDuringStream,
    'each write during the stream made a revision',
  );

  // count and limit over the whole range
  const limited = await store.range({ key: prefix, rangeEnd: prefixEnd(prefix), limit: 10 });
  t.equal(limited.kvs.length, 10);
  t.equal(limited.count, N + 1);
  t.ok(limited.more);
  const counted = await store.range({ key: prefix, rangeEnd: prefixEnd(prefix), countOnly: true });
  t.equal(counted.count, N + 1);
  t.equal(counted.kvs.length, 0);

  // A historical read sees the revision it asked for.
  const old = await store.range({ key: key(0), revision: revBefore });
  t.equal(Buffer.from(old.kvs[0]?.value ?? []).toString(), 'v0');
  const oldAll = await store.range({
    key: prefix,
    rangeEnd: prefixEnd(prefix),
    revision: revBefore,
    countOnly: true,
  });
  t.equal(oldAll.count, N);
});
