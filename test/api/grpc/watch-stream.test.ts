/**
 * The Watch call as the member serves it on its own HTTP/2 stream (src/api/grpc/raw-call.ts),
 * seen from grpc-js as a client over a real socket: many watches on one stream receive a
 * burst of writes exactly once and in order (whatever responses they arrive merged in); a
 * request over the receive limit ends the stream with RESOURCE_EXHAUSTED; gzip-compressed
 * requests are read (half-close: watch-half-close.test.ts). One member serves every subtest.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import grpc from '@grpc/grpc-js';
import t from 'tap';
import { startSingle } from '../../server/helpers.js';
import { b, type Msg, RawClient, s } from './client.js';

const MAX_REQUEST = 64 * 1024;
const PUT = '/etcdserverpb.KV/Put';

const m = await startSingle(mkdtempSync(join(tmpdir(), 'grpc-watch-stream-')), {
  maxRequestBytes: MAX_REQUEST,
});
const host = m.clientUrls[0]!.host;
const c = new RawClient(host);
t.teardown(async () => {
  c.close();
  await m.stop();
});

t.test('40 watches on one stream: a burst of 400 writes, each once and in order', async (t) => {
  const w = c.watch();
  t.teardown(() => w.end());
  const WATCHES = 40;
  for (let i = 0; i < WATCHES; i++)
    w.send({ create_request: { key: b('burst/'), range_end: b('burst0'), prev_kv: i % 2 === 1 } });
  const created = await w.until((r) => r.created === true && r.watch_id === WATCHES - 1);
  t.same(
    created.map((r) => r.watch_id ?? 0),
    Array.from({ length: WATCHES }, (_, i) => i),
    'created answers in request order',
  );
  const revisions: number[] = [];
  for (let round = 0; round < 8; round++) {
    const puts = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        c.call(PUT, { key: b(`burst/${i % 9}`), value: b(`${round}.${i}`) }),
      ),
    );
    for (const p of puts) revisions.push(p.header.revision);
  }
  revisions.sort((x, y) => x - y);
  const got = new Map<number, number[]>();
  let responses = 0;
  let total = 0;
  while (total < WATCHES * revisions.length) {
    const r: Msg = await w.next(30_000);
    responses++;
    const id = r.watch_id ?? 0;
    const list = got.get(id) ?? [];
    got.set(id, list);
    for (const e of r.events ?? []) {
      list.push(e.kv.mod_revision);
      total++;
      if (id % 2 === 1 && e.prev_kv === undefined && e.kv.version > 1)
        t.fail(`watch ${id}: prev_kv missing at ${e.kv.mod_revision}`);
    }
    if (r.events?.length > 0 && r.header.revision !== r.events[r.events.length - 1].kv.mod_revision)
      t.fail('a response whose header is not its last revision');
  }
  for (let i = 0; i < WATCHES; i++)
    t.same(got.get(i), revisions, `watch ${i}: every revision once, in order`);
  t.ok(responses <= total, `${total} events in ${responses} responses`);
});

t.test(
  'a WatchRequest over the receive limit: RESOURCE_EXHAUSTED, the member serves on',
  async (t) => {
    const w = c.watch();
    w.call.write(Buffer.alloc(MAX_REQUEST + 600 * 1024, 0x0a));
    const err = await w.next().then(
      () => undefined,
      (e) => e as { code: number; details: string },
    );
    t.equal(err?.code, grpc.status.RESOURCE_EXHAUSTED);
    t.match(err?.details, /larger than max/);
    const again = c.watch();
    t.teardown(() => again.end());
    again.send({ create_request: { key: b('after-big') } });
    t.match(await again.next(), { created: true }, 'a new stream is served');
  },
);

t.test('gzip-compressed WatchRequests are read', async (t) => {
  const gz = new RawClient(host, { 'grpc.default_compression_algorithm': 2 });
  const w = gz.watch();
  t.teardown(() => {
    w.end();
    gz.close();
  });
  w.send({ create_request: { key: b('gz'), watch_id: 5 } });
  t.match(await w.next(), { created: true, watch_id: 5 });
  await c.call(PUT, { key: b('gz'), value: b('zipped') });
  const ev = await w.next();
  t.equal(s(ev.events[0].kv.value), 'zipped');
});
