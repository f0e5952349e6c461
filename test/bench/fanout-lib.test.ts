/**
 * The fan-out benchmark's lean readers and helpers (bench/lib): they skip most of each message,
 * so these tests pin what they must still get right, against the server's own JSON encoder, a
 * hand-built protobuf WatchResponse, and a real websocket server (the ws package).
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import t from 'tap';
import { WebSocketServer } from 'ws';
import { prefixRange, writeTarget } from '../../bench/fanout-plan.js';
import { scanJsonWatchResponse } from '../../bench/lib/etcd-json-scan.js';
import {
  decodePutRevision,
  encodePut,
  encodeWatchCreate,
  scanWatchResponse,
  type WatchResponseInfo,
} from '../../bench/lib/etcd-proto.js';
import {
  encodeHistogram,
  latencyHistogram,
  mergeHistograms,
  summarizeMs,
} from '../../bench/lib/histogram.js';
import { connectLean } from '../../bench/lib/ws-lean.js';
import type { Event } from '../../src/store/types.js';
import { eventToJson } from '../../src/watchcache/encoders/etcd-json.js';

const blankInfo = (): WatchResponseInfo => ({
  watchId: 0,
  headerRevision: 0,
  created: false,
  canceled: false,
  compactRevision: 0,
  cancelReason: '',
  events: 0,
});

function stamped(us: number, size = 32): Uint8Array {
  const v = Buffer.alloc(size, 'x');
  v.writeDoubleBE(us, 0);
  return v;
}

function putEvent(key: string, rev: number, value: Uint8Array): Event {
  return {
    type: 'PUT',
    kv: { key: Buffer.from(key), createRevision: 2, modRevision: rev, version: 1, value, lease: 0 },
  } as unknown as Event;
}

t.test('JSON scan reads what the server encodes: watch id, revisions, stamps', async (t) => {
  const events = [putEvent('/a/1', 41, stamped(1234.5)), putEvent('/a/2', 41, stamped(99.25, 8))];
  const frame = Buffer.from(
    `{"result":{"header":{"cluster_id":"9","revision":"41"},"watch_id":"17","events":[${events.map((e) => eventToJson(e, false)).join(',')}]}}`,
  );
  const seen: [number, number][] = [];
  const info = blankInfo();
  scanJsonWatchResponse(frame, info, (rev, stamp) => seen.push([rev, stamp]));
  t.same(seen, [
    [41, 1234.5],
    [41, 99.25],
  ]);
  t.equal(info.watchId, 17);
  t.equal(info.headerRevision, 41);
  t.equal(info.events, 2);
  t.notOk(info.created);
});

t.test(
  'JSON scan: created, canceled with a reason, watch id 0 omitted, value-less events',
  async (t) => {
    const info = blankInfo();
    const none = () => t.fail('no events expected');
    scanJsonWatchResponse(
      Buffer.from('{"result":{"header":{"revision":"5"},"created":true}}'),
      info,
      none,
    );
    t.ok(info.created);
    t.equal(info.watchId, 0);
    scanJsonWatchResponse(
      Buffer.from(
        '{"result":{"header":{"revision":"9"},"watch_id":"3","canceled":true,"cancel_reason":"slow"}}',
      ),
      info,
      none,
    );
    t.ok(info.canceled);
    t.equal(info.cancelReason, 'slow');
    t.equal(info.watchId, 3);
    const del = {
      type: 'DELETE',
      kv: {
        key: Buffer.from('/k'),
        createRevision: 0,
        modRevision: 12,
        version: 0,
        value: new Uint8Array(),
        lease: 0,
      },
    } as unknown as Event;
    const stamps: number[] = [];
    const frame = `{"result":{"header":{"revision":"13"},"events":[${eventToJson(del, false)},${eventToJson(putEvent('/k', 13, stamped(7)), false)}]}}`;
    scanJsonWatchResponse(Buffer.from(frame), info, (_rev, s) => stamps.push(s));
    t.ok(Number.isNaN(stamps[0]), 'a delete has no value, so no stamp (not the next event’s)');
    t.equal(stamps[1], 7);
  },
);

// A tiny protobuf writer, only for building test input for the decoder.
function varint(n: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}
const vfield = (f: number, n: number | bigint) =>
  Buffer.from([...varint((f << 3) | 0), ...varint(n)]);
const lfield = (f: number, body: Uint8Array) =>
  Buffer.concat([Buffer.from([...varint((f << 3) | 2), ...varint(body.length)]), body]);

t.test(
  'protobuf scan of a WatchResponse: header, id, events; unknown fields skipped',
  async (t) => {
    const kv = (rev: number, value: Uint8Array) =>
      lfield(
        2,
        Buffer.concat([
          lfield(1, Buffer.from('/a/x')),
          vfield(2, 3),
          vfield(3, rev),
          vfield(4, 1),
          lfield(5, value),
          vfield(6, 0),
        ]),
      );
    const msg = Buffer.concat([
      lfield(1, Buffer.concat([vfield(1, 77), vfield(2, 88), vfield(3, 300), vfield(4, 2)])),
      vfield(2, 5),
      vfield(7, 0),
      lfield(11, kv(299, stamped(42.5))),
      lfield(11, Buffer.concat([vfield(1, 0), kv(300, stamped(43.5, 8))])),
    ]);
    const info = blankInfo();
    const seen: [number, number][] = [];
    scanWatchResponse(msg, info, (rev, stamp) => seen.push([rev, stamp]));
    t.same(seen, [
      [299, 42.5],
      [300, 43.5],
    ]);
    t.equal(info.watchId, 5);
    t.equal(info.events, 2);
  },
);

t.test(
  'protobuf scan: a refused create (watch_id -1, ten-byte varint) and a compaction',
  async (t) => {
    const info = blankInfo();
    scanWatchResponse(
      Buffer.concat([
        vfield(2, -1),
        vfield(3, 1),
        vfield(4, 1),
        lfield(6, Buffer.from('mvcc: duplicate')),
      ]),
      info,
      () => t.fail('no events'),
    );
    t.equal(info.watchId, -1);
    t.ok(info.created && info.canceled);
    t.equal(info.cancelReason, 'mvcc: duplicate');
    scanWatchResponse(
      Buffer.concat([vfield(2, 2), vfield(4, 1), vfield(5, 2 ** 40)]),
      info,
      () => {},
    );
    t.equal(info.compactRevision, 2 ** 40);
  },
);

t.test('protobuf requests: create and put encode the fields etcd reads', async (t) => {
  const create = encodeWatchCreate(Buffer.from('/p/'), Buffer.from('/p0'), 300);
  t.same(
    [...create],
    [0x0a, 13, 0x0a, 3, ...Buffer.from('/p/'), 0x12, 3, ...Buffer.from('/p0'), 0x18, 0xac, 0x02],
  );
  t.same([...encodePut(Buffer.from('k'), Buffer.from('vv'))], [0x0a, 1, 0x6b, 0x12, 2, 0x76, 0x76]);
  const putResponse = lfield(1, Buffer.concat([vfield(1, 1), vfield(3, 123456)]));
  t.equal(decodePutRevision(putResponse), 123456);
});

t.test(
  'lean websocket client: many frames per read, sizes across length forms, ping',
  async (t) => {
    const server = createServer();
    const wss = new WebSocketServer({ server });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const sizes = [0, 5, 125, 126, 300, 65_535, 65_536, 200_000];
    wss.on('connection', (ws) => {
      ws.on('message', (m) => {
        t.equal(m.toString(), 'hello', 'the server reads our zero-masked frame');
        ws.ping();
        for (const n of sizes) ws.send(Buffer.alloc(n, n % 251));
      });
    });
    const got: number[] = [];
    const done = new Promise<void>((resolve) => {
      void connectLean(`ws://127.0.0.1:${port}/`, {
        onMessage: (p) => {
          t.ok(p.every((b) => b === p.length % 251));
          got.push(p.length);
          if (got.length === sizes.length) resolve();
        },
        onClose: () => {},
      }).then((ws) => {
        ws.send('hello');
        t.teardown(() => ws.close());
      });
    });
    await done;
    t.same(got, sizes);
    wss.close();
    server.close();
  },
);

t.test('histograms merge across processes; key layout', async (t) => {
  const a = latencyHistogram();
  const b = latencyHistogram();
  for (let i = 1; i <= 99; i++) a.recordValue(1000);
  b.recordValue(500_000);
  const s = summarizeMs(mergeHistograms([encodeHistogram(a), encodeHistogram(b)]));
  t.equal(s.count, 100);
  t.equal(s.p50, 1);
  t.ok(s.max >= 499 && s.max <= 501);
  const { key, rangeEnd } = prefixRange('/fanout/w1/');
  t.equal(rangeEnd.toString(), '/fanout/w10', "w1/'s range ends before w10/ (slash + 1 is '0')");
  t.ok(Buffer.compare(Buffer.from('/fanout/w10/k0'), rangeEnd) >= 0, 'w10/ keys are outside w1/');
  t.ok(Buffer.compare(key, Buffer.from('/fanout/w1/k0')) < 0);
  const c = { layout: 'own', watchers: 3, keysPerPrefix: 2 } as Parameters<typeof writeTarget>[0];
  t.same(
    [0, 1, 2, 3, 4, 5, 6].map((n) => writeTarget(c, n).key),
    [
      '/fanout/w0/k0',
      '/fanout/w1/k0',
      '/fanout/w2/k0',
      '/fanout/w0/k1',
      '/fanout/w1/k1',
      '/fanout/w2/k1',
      '/fanout/w0/k0',
    ],
  );
});
