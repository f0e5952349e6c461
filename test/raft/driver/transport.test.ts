import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import WebSocket, { WebSocketServer } from 'ws';
import { encodeBatch } from '../../../src/raft/driver/frames.js';
import { RaftTransport, type RaftTransportOptions } from '../../../src/raft/driver/transport.js';
import {
  LogIndex,
  type Message,
  type MsgHeartbeat,
  type MsgSnap,
  NodeId,
  Term,
} from '../../../src/raft/types.js';
import { messageArb } from './arbitraries.js';
import { waitFor } from './helpers.js';

const A = NodeId(1);
const B = NodeId(2);
const url = (a: AddressInfo) => `http://127.0.0.1:${a.port}`;
const plain = (v: unknown): unknown =>
  JSON.parse(JSON.stringify(v, (_k, x) => (x instanceof Uint8Array ? [...x] : x)));

const hb = (from: NodeId, to: NodeId, commit = 0): MsgHeartbeat => ({
  type: 'heartbeat',
  from,
  to,
  term: Term(1),
  commit: LogIndex(commit),
  context: new Uint8Array(0),
});

/** A receiving transport B (standalone) and a sending transport A pointed at it. */
async function pair(t: Test, aOpts: Partial<RaftTransportOptions> = {}) {
  const got: Message[] = [];
  const events: string[] = [];
  const b = new RaftTransport({ id: B, onMessage: (m) => got.push(m) });
  const addr = await b.listen();
  const a = new RaftTransport({
    id: A,
    onMessage: () => {},
    onUnreachable: (id) => events.push(`unreachable ${id}`),
    onSnapshotStatus: (id, s) => events.push(`snapshot ${id} ${s}`),
    peers: new Map([[B, url(addr)]]),
    ...aOpts,
  });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await waitFor(() => a.stats().peers[B]?.connected === true, 'A connected to B');
  return { a, b, got, events, addr };
}

t.test('messages arrive intact and in order, batched per turn', async (t) => {
  const { a, got } = await pair(t);
  const sample = fc.sample(messageArb, { numRuns: 300, seed: 42 }).filter((m) => m.type !== 'snap');
  const sent = sample.map((m) => ({ ...m, from: A, to: B }) as Message);
  a.send(sent.slice(0, 150));
  a.send(sent.slice(150));
  await waitFor(() => got.length === sent.length, 'all messages delivered');
  t.same(plain(got), plain(sent), `${sent.length} messages delivered intact and in order`);
  t.equal(a.stats().peers[B]!.sent, sent.length);
  t.equal(a.stats().peers[B]!.frames, 1, 'both sends of one turn went out as one frame');
});

t.test('a snapshot travels in chunks, interleaved with other traffic', async (t) => {
  const { a, got, events } = await pair(t, { limits: { snapshotChunkBytes: 16 * 1024 } });
  const data = new Uint8Array(1024 * 1024).map((_, i) => (i * 7) & 0xff);
  const snap: MsgSnap = {
    type: 'snap',
    from: A,
    to: B,
    term: Term(3),
    snapshot: {
      metadata: { index: LogIndex(99), term: Term(3), confState: { voters: [A, B], learners: [] } },
      data,
    },
  };
  a.send([snap, hb(A, B, 1)]);
  await waitFor(() => got.length === 1, 'the heartbeat');
  t.equal(got[0]!.type, 'heartbeat', 'the heartbeat did not wait for 64 chunks');
  a.send([hb(A, B, 2)]);
  await waitFor(() => got.some((m) => m.type === 'snap'), 'the snapshot');
  const received = got.find((m) => m.type === 'snap') as MsgSnap;
  t.same(plain(received.snapshot.metadata), plain(snap.snapshot.metadata));
  t.ok(Buffer.from(received.snapshot.data).equals(Buffer.from(data)), 'data intact');
  await waitFor(() => events.includes(`snapshot ${B} finish`), 'finish report');
});

t.test('an unreachable peer: drops, reports, and reconnects when it is back', async (t) => {
  const { a, b, got, events, addr } = await pair(t, {
    limits: { backoffMinMs: 20, backoffMaxMs: 100 },
  });
  await b.close();
  await waitFor(() => a.stats().peers[B]?.connected === false, 'A noticed');
  a.send([hb(A, B)]);
  t.ok(events.includes(`unreachable ${B}`), 'raft told the peer is unreachable');
  t.equal(a.stats().peers[B]!.dropped, 1);
  a.send([
    {
      ...hb(A, B),
      type: 'snap',
      snapshot: {
        metadata: { index: LogIndex(1), term: Term(1), confState: { voters: [], learners: [] } },
        data: new Uint8Array(1),
      },
    } as Message,
  ]);
  t.ok(events.includes(`snapshot ${B} failure`), 'a snapshot that cannot go reports failure');

  const got2: Message[] = [];
  const b2 = new RaftTransport({ id: B, onMessage: (m) => got2.push(m) });
  t.teardown(() => b2.close());
  await b2.listen(addr.port);
  await waitFor(() => a.stats().peers[B]?.connected === true, 'A reconnected');
  a.send([hb(A, B, 7)]);
  await waitFor(() => got2.length === 1, 'delivery after reconnect');
  t.equal((got2[0] as MsgHeartbeat).commit, 7);
  t.equal(got.length, 0);
});

t.test('queues are bounded: past the cap messages drop instead of piling up', async (t) => {
  const { a, got } = await pair(t, { limits: { maxQueueMessages: 10 } });
  a.send(Array.from({ length: 100 }, (_, i) => hb(A, B, i)));
  t.equal(a.stats().peers[B]!.dropped, 90);
  await waitFor(() => got.length === 10, 'the first ten');
  t.same(
    got.map((m) => (m as MsgHeartbeat).commit),
    [...Array(10).keys()],
  );
});

t.test('mounts on an existing HTTP server beside other upgrade handlers', async (t) => {
  const got: Message[] = [];
  const b = new RaftTransport({ id: B, onMessage: (m) => got.push(m) });
  const server: Server = createServer((_q, r) => r.end('hello'));
  const other = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (b.handleUpgrade(req, socket, head)) return;
    other.handleUpgrade(req, socket, head, (ws) => ws.send('other'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address() as AddressInfo;
  const a = new RaftTransport({ id: A, onMessage: () => {}, peers: new Map([[B, url(addr)]]) });
  t.teardown(async () => {
    await a.close();
    await b.close();
    other.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  await waitFor(() => a.stats().peers[B]?.connected === true, 'connected');
  a.send([hb(A, B, 5)]);
  await waitFor(() => got.length === 1, 'delivery');
  const ws = new WebSocket(`ws://127.0.0.1:${addr.port}/elsewhere`);
  const text = await new Promise<string>((r) => ws.on('message', (d) => r(String(d))));
  ws.close();
  t.equal(text, 'other', 'other paths are left to other handlers');
});

t.test('refuses streams for another member or another cluster', async (t) => {
  const b = new RaftTransport({ id: B, onMessage: () => {}, clusterToken: 'c1' });
  const addr = await b.listen();
  t.teardown(() => b.close());
  const tryOpen = (query: string) =>
    new Promise<string>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${addr.port}/raft?${query}`);
      ws.on('open', () => {
        ws.close();
        resolve('open');
      });
      ws.on('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
      ws.on('error', (e) => resolve(e.message));
    });
  t.equal(await tryOpen('from=1&to=2&cluster=c1'), 'open');
  t.match(await tryOpen('from=1&to=3&cluster=c1'), /404/);
  t.match(await tryOpen('from=1&to=2&cluster=c2'), /412/);
  t.match(await tryOpen('from=0&to=2&cluster=c1'), /400/);
});

t.test('malformed and forged frames are dropped, the stream survives', async (t) => {
  const got: Message[] = [];
  const b = new RaftTransport({ id: B, onMessage: (m) => got.push(m) });
  const addr = await b.listen();
  t.teardown(() => b.close());
  const ws = new WebSocket(`ws://127.0.0.1:${addr.port}/raft?from=1&to=2&cluster=`);
  await new Promise((r) => ws.on('open', r));
  ws.send(Uint8Array.of(1, 5, 99, 99));
  ws.send('text frame');
  ws.send(encodeBatch([hb(NodeId(3), B)]));
  ws.send(encodeBatch([hb(A, B, 4)]));
  await waitFor(() => got.length === 1, 'the valid message');
  ws.close();
  t.equal((got[0] as MsgHeartbeat).commit, 4);
  t.equal(b.stats().badFrames, 3);
});

t.test('a peer that dials in is redialled at once, not after the backoff', async (t) => {
  const slow = { backoffMinMs: 5000, backoffMaxMs: 5000 };
  const a = new RaftTransport({ id: A, onMessage: () => {}, limits: slow });
  const aAddr = await a.listen();
  const got: Message[] = [];
  const b = new RaftTransport({ id: B, onMessage: (m) => got.push(m) });
  const bAddr = await b.listen();
  a.setPeer(B, url(bAddr));
  t.teardown(() => a.close());
  await waitFor(() => a.stats().peers[B]?.connected === true, 'A connected to B');
  await b.close();
  await waitFor(() => a.stats().peers[B]?.connected === false, 'A noticed B left');
  const b2 = new RaftTransport({
    id: B,
    onMessage: (m) => got.push(m),
    peers: new Map([[A, url(aAddr)]]),
  });
  t.teardown(() => b2.close());
  await b2.listen(bAddr.port);
  const started = Date.now();
  await waitFor(() => a.stats().peers[B]?.connected === true, 'A redialled B', 3000);
  t.ok(Date.now() - started < 3000, 'well inside the 5 s backoff');
  a.send([hb(A, B, 9)]);
  await waitFor(() => got.length === 1, 'delivery');
});
