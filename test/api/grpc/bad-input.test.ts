/**
 * Bad input on the gRPC face: bytes that are not the method's message, unknown methods,
 * oversized messages, garbage after the HTTP/2 preface, and a watch stream opened and abandoned
 * 10,000 times. Each gets a clear status (or its connection ends), nothing changes, the member
 * keeps serving both faces, and memory stays bounded.
 */
import { mkdtempSync } from 'node:fs';
import http2 from 'node:http2';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import grpc from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import { HTTP2_PREFACE } from '../../../src/server/client-http.js';
import { startSingle, waitFor } from '../../server/helpers.js';
import { b, encode, RawClient, s } from './client.js';

const MAX_REQUEST = 64 * 1024;

// A full collection before each memory reading, so that only live memory is compared.
v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function setup(t: Test) {
  const m = await startSingle(mkdtempSync(join(tmpdir(), 'grpc-bad-')), {
    maxRequestBytes: MAX_REQUEST,
  });
  const c = new RawClient(m.clientUrls[0]!.host, {
    'grpc.max_send_message_length': 8 * 1024 * 1024,
  });
  t.teardown(async () => {
    c.close();
    await m.stop();
  });
  await c.call('/etcdserverpb.KV/Put', { key: b('k'), value: b('v') });
  return { m, c, url: m.clientUrls[0]!.href.replace(/\/$/, '') };
}

async function refusal(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await p;
  } catch (e) {
    const g = e as { code: number; details: string };
    return { code: g.code, details: g.details };
  }
  throw new Error('the call succeeded');
}

/** The member still serves: a gRPC read and a JSON read both see the key. */
async function stillServing(t: Test, c: RawClient, url: string, revision: number) {
  const r = await c.call('/etcdserverpb.KV/Range', { key: b('k') });
  t.equal(s(r.kvs[0].value), 'v');
  t.equal(r.header.revision, revision, 'nothing was written');
  const res = await fetch(`${url}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: 'aw==' }),
  });
  t.equal(res.status, 200);
}

t.test('malformed protobuf: INTERNAL with grpc-go text, nothing changed', async (t) => {
  const { c, url } = await setup(t);
  // Field 1 (key) announced as 100 bytes long, 2 given.
  const broken = Buffer.from([0x0a, 100, 0x61, 0x62]);
  for (const path of [
    '/etcdserverpb.KV/Put',
    '/etcdserverpb.KV/Txn',
    '/etcdserverpb.Lease/LeaseGrant',
  ]) {
    const r = await refusal(c.call(path, broken));
    t.equal(r.code, grpc.status.INTERNAL, path);
    t.match(r.details, /^grpc: error unmarshalling request: /, path);
  }
  // A malformed message on the Watch stream ends that stream with the same status.
  const w = c.watch();
  w.call.write(broken);
  const err = await w.next().then(
    () => undefined,
    (e) => e as { code: number; details: string },
  );
  t.equal(err?.code, grpc.status.INTERNAL);
  await stillServing(t, c, url, 2);
});

t.test('unknown methods: UNIMPLEMENTED', async (t) => {
  const { c, url } = await setup(t);
  for (const path of ['/etcdserverpb.KV/Nope', '/etcdserverpb.Nothing/Range', '/x']) {
    const r = await new Promise<{ code: number }>((resolve) =>
      c.client.makeUnaryRequest(
        path,
        (x: Buffer) => x,
        (x: Buffer) => x,
        Buffer.alloc(0),
        (e) => resolve({ code: e?.code ?? 0 }),
      ),
    );
    t.equal(r.code, grpc.status.UNIMPLEMENTED, path);
  }
  await stillServing(t, c, url, 2);
});

t.test('oversized messages: RESOURCE_EXHAUSTED past the gRPC allowance, as etcd', async (t) => {
  const { c, url } = await setup(t);
  // Over --max-request-bytes but within etcd's 512 KiB gRPC allowance: the member's own check.
  t.same(
    await refusal(
      c.call('/etcdserverpb.KV/Put', { key: b('big'), value: Buffer.alloc(100 * 1024) }),
    ),
    {
      code: grpc.status.INVALID_ARGUMENT,
      details: 'etcdserver: request is too large',
    },
  );
  // Over the allowance: grpc's receive limit.
  const r = await refusal(
    c.call('/etcdserverpb.KV/Put', {
      key: b('big'),
      value: Buffer.alloc(MAX_REQUEST + 600 * 1024),
    }),
  );
  t.equal(r.code, grpc.status.RESOURCE_EXHAUSTED);
  t.match(r.details, /larger than max/i);
  await stillServing(t, c, url, 2);
});

t.test('garbage HTTP/2 frames: the connection ends, the member stays up', async (t) => {
  const { m, c, url } = await setup(t);
  const port = m.clientUrls[0]!.port;
  for (const garbage of [
    Buffer.from('not a settings frame at all, just bytes'),
    // A frame header claiming a 16 MiB DATA frame on stream 0.
    Buffer.from([0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]),
  ]) {
    const closed = await new Promise<boolean>((resolve) => {
      const sock = connect(Number(port), '127.0.0.1', () => {
        sock.write(Buffer.concat([HTTP2_PREFACE, garbage]));
      });
      sock.on('data', () => undefined);
      sock.on('error', () => undefined);
      sock.on('close', () => resolve(true));
    });
    t.ok(closed, 'the server closed the connection');
  }
  await stillServing(t, c, url, 2);
});

t.test('a watch stream opened and abandoned 10,000 times', async (t) => {
  const { m, c, url } = await setup(t);
  const create = encode('etcdserverpb.WatchRequest', { create_request: { key: b('k') } });
  const batch = 100;
  let rssBefore = 0;
  let heapBefore = 0;
  for (let i = 0; i < 10_000; i += batch) {
    // The first thousand warm up both sides (code, pools); growth is measured after them.
    if (i === 1000) {
      gc();
      heapBefore = process.memoryUsage().heapUsed;
      rssBefore = process.memoryUsage().rss;
    }
    await Promise.all(
      Array.from(
        { length: batch },
        () =>
          new Promise<void>((resolve) => {
            const call = c.client.makeBidiStreamRequest(
              '/etcdserverpb.Watch/Watch',
              (x: Buffer) => x,
              (x: Buffer) => x,
            );
            call.on('error', () => resolve());
            call.on('data', () => call.cancel());
            call.on('end', () => resolve());
            call.on('close', () => resolve());
            call.write(create);
          }),
      ),
    );
  }
  gc();
  const mib = (n: number) => Math.round(n / 1024 / 1024);
  const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
  const rssGrowth = process.memoryUsage().rss - rssBefore;
  t.ok(
    heapGrowth < 32 * 1024 * 1024,
    `live heap grew ${mib(heapGrowth)} MiB (RSS ${mib(rssGrowth)} MiB) over 9,000 abandoned streams`,
  );
  await waitFor('abandoned watches removed', () => m.watchCache.stats().watchers === 0);
  t.equal(m.watchCache.stats().watchers, 0, 'every abandoned watch was removed');
  await stillServing(t, c, url, 2);
});

t.test('HTTP/2 pings on the shared port are answered', async (t) => {
  const { c, url } = await setup(t);
  const session = http2.connect(url);
  t.teardown(() => session.close());
  const acked = await new Promise<boolean>((resolve, reject) => {
    session.on('error', reject);
    session.once('connect', () =>
      session.ping(Buffer.from('etcetera'), (err, _ms, payload) =>
        resolve(!err && Buffer.from(payload).toString() === 'etcetera'),
      ),
    );
  });
  t.ok(acked, 'the ping came back with its payload');
  await stillServing(t, c, url, 2);
});
