/**
 * The transport's member filter follows the membership as it changes: a sender that is not
 * a member is dropped and reported (its snapshot chunks too), becomes heard as soon as it is
 * a member, and is dropped again once removed.
 */
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { encodeBatch, encodeSnapChunk } from '../../../src/raft/driver/frames.js';
import { type DroppedMessage, RaftTransport } from '../../../src/raft/driver/transport.js';
import {
  LogIndex,
  type Message,
  type MsgHeartbeat,
  NodeId,
  Term,
} from '../../../src/raft/types.js';
import { waitFor } from './helpers.js';

const A = NodeId(1);
const B = NodeId(2);
const hb = (n: number): MsgHeartbeat => ({
  type: 'heartbeat',
  from: A,
  to: B,
  term: Term(1),
  commit: LogIndex(n),
  context: new Uint8Array(0),
});

t.test('non-members are dropped until added, and again once removed', async (t) => {
  const members = new Set<NodeId>();
  const got: Message[] = [];
  const drops: DroppedMessage[] = [];
  const b = new RaftTransport({
    id: B,
    onMessage: (m) => got.push(m),
    isMember: (id) => members.has(id),
    onDrop: (d) => drops.push(d),
  });
  const addr: AddressInfo = await b.listen();
  const a = new RaftTransport({
    id: A,
    onMessage: () => {},
    peers: new Map([[B, `http://127.0.0.1:${addr.port}`]]),
  });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await waitFor(() => a.stats().peers[B]?.connected === true, 'A connected to B');

  a.send([hb(1), hb(2)]);
  await waitFor(() => b.stats().dropped === 2, 'two drops');
  t.same(got, [], 'nothing delivered from a non-member');
  t.equal(drops[0]?.claimed, A);
  t.equal(drops[0]?.type, 'heartbeat');
  t.match(drops[0]?.remote, /^127\.0\.0\.1:\d+$/);

  members.add(A); // its conf change was applied
  a.send([hb(3)]);
  await waitFor(() => got.length === 1, 'delivered once a member');
  t.equal((got[0] as MsgHeartbeat).commit, 3);

  members.delete(A); // removed
  a.send([hb(4)]);
  await waitFor(() => b.stats().dropped === 3, 'dropped again once removed');
  t.equal(got.length, 1);
  t.equal(b.stats().received, 1);
});

t.test("a stranger's snapshot chunks are dropped, not buffered", async (t) => {
  const drops: DroppedMessage[] = [];
  const b = new RaftTransport({
    id: B,
    onMessage: () => t.fail('nothing may be delivered'),
    isMember: () => false,
    onDrop: (d) => drops.push(d),
  });
  const addr = await b.listen();
  t.teardown(() => b.close());
  const { default: WebSocket } = await import('ws');
  const ws = new WebSocket(`ws://127.0.0.1:${addr.port}/raft?from=${A}&to=${B}&cluster=`);
  t.teardown(() => ws.terminate());
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  ws.send(encodeSnapChunk({ id: 1, total: 1 << 20, offset: 0, chunk: new Uint8Array(1024) }));
  ws.send(encodeBatch([hb(1)]));
  await waitFor(() => b.stats().dropped === 2, 'both dropped');
  t.same(
    drops.map((d) => d.type),
    ['snap', 'heartbeat'],
  );
  t.equal(b.stats().badFrames, 0, 'dropped as a stranger, not as a malformed frame');
});
