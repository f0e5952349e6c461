/**
 * The websocket form of /v3/watch writes each batch's messages as raw frames in one socket write
 * (src/api/etcd/watch/frames.ts, wsTextMessages). A real ws client must read every message intact: all
 * three payload-length forms (7-bit, 16-bit, 64-bit), many messages in one write, and in order.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { wsTextMessages } from '../../src/api/etcd/watch/frames.js';
import { createEtcdWatchHandlers } from '../../src/api/etcd/watch/index.js';
import { Cacher } from '../../src/watchcache/cacher.js';
import { MemoryStore } from '../watchcache/memory-store.js';

t.test('frame headers for each payload-length form', async (t) => {
  const frame = (n: number) => ({ chunks: [Buffer.alloc(n, 'a')], bytes: n });
  const out = wsTextMessages([frame(125), frame(126), frame(65_535), frame(65_536)]);
  t.same([...out.subarray(0, 2)], [0x81, 125]);
  let at = 2 + 125;
  t.same([...out.subarray(at, at + 4)], [0x81, 126, 0, 126]);
  at += 4 + 126;
  t.same([...out.subarray(at, at + 4)], [0x81, 126, 0xff, 0xff]);
  at += 4 + 65_535;
  t.same([...out.subarray(at, at + 10)], [0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0]);
  t.equal(out.length, at + 10 + 65_536);
  const split = wsTextMessages([{ chunks: [Buffer.from('ab'), Buffer.from('c')], bytes: 3 }]);
  t.same(split.toString('latin1'), '\x81\x03abc', 'chunks of a frame are joined in order');
});

t.test(
  'a ws client reads small, medium and large messages, many per write, in order',
  async (t) => {
    const store = new MemoryStore();
    const cacher = new Cacher(store);
    const watch = createEtcdWatchHandlers({ cacher });
    const server = http.createServer();
    const wss = new WebSocketServer({ server, path: '/v3/watch' });
    wss.on('connection', (ws, req) => watch.websocket(ws, req));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.teardown(() => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.close();
      cacher.close();
    });
    const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/v3/watch`);
    const messages: {
      result: { watch_id?: string; created?: boolean; events?: { kv: { value: string } }[] };
    }[] = [];
    ws.on('message', (d) => messages.push(JSON.parse(d.toString())));
    await once(ws, 'open');
    const WATCHES = 20;
    for (let i = 0; i < WATCHES; i++)
      ws.send(JSON.stringify({ create_request: { key: Buffer.from('k').toString('base64') } }));
    const waitFor = async (n: number) => {
      for (let i = 0; i < 300 && messages.length < n; i++)
        await new Promise((r) => setTimeout(r, 10));
      t.equal(messages.length, n, `${n} messages arrived`);
    };
    await waitFor(WATCHES);
    t.ok(messages.every((m) => m.result.created));
    // Values whose responses need each length form; every watch gets each one.
    const sizes = [1, 150, 60_000, 100_000];
    for (const n of sizes) store.put('k', 'v'.repeat(n));
    await waitFor(WATCHES + WATCHES * sizes.length);
    const perWatch = new Map<string, number[]>();
    for (const m of messages.slice(WATCHES)) {
      const id = m.result.watch_id ?? '0';
      const lengths = perWatch.get(id) ?? [];
      for (const e of m.result.events ?? []) lengths.push(Buffer.from(e.kv.value, 'base64').length);
      perWatch.set(id, lengths);
    }
    t.equal(perWatch.size, WATCHES);
    for (const lengths of perWatch.values()) t.same(lengths, sizes);
    ws.close();
  },
);
