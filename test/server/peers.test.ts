/**
 * Peer-port safety: a websocket that claims a non-member id is heard by nobody. A forged
 * append with a higher term must not depose the leader, a forged proposal must not be
 * applied, and every dropped message is counted in the member's metrics and logged (at a
 * bounded rate).
 */
import t from 'tap';
import WebSocket from 'ws';
import { encodeBatch } from '../../src/raft/driver/frames.js';
import { EntryType, LogIndex, type Message, NodeId, Role, Term } from '../../src/raft/types.js';
import { EntryKind, encodeEntry } from '../../src/server/entry.js';
import { encodeCommand } from '../../src/store/codec.js';
import { capturingLogger, enc, startSingle, waitFor } from './helpers.js';

async function droppedCount(m: {
  metrics: { getSingleMetricAsString(n: string): Promise<string> };
}) {
  const text = await m.metrics.getSingleMetricAsString(
    'etcetera_network_peer_dropped_messages_total',
  );
  const line = text.split('\n').find((l) => l.includes('reason="not_member"'));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

t.test('a stranger on the peer port can neither depose the leader nor commit', async (t) => {
  const { logger, lines } = capturingLogger('m1');
  const m = await startSingle(t.testdir(), {}, { logger });
  t.teardown(() => m.stop());
  await waitFor('leader', () => m.driver.status().role === Role.Leader);
  await m.write({ op: 'put', key: enc('real'), value: enc('1') });
  const before = m.driver.status();
  const revision = m.store.currentRevision;
  const header = m.header();

  const forger = NodeId(999);
  const self = NodeId(Number(header.memberId));
  const url = new URL('/raft', m.peerUrls[0]!.href);
  url.protocol = 'ws:';
  url.search = new URLSearchParams({
    from: String(forger),
    to: header.memberId,
    cluster: header.clusterId,
  }).toString();
  const ws = new WebSocket(url);
  t.teardown(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });

  const put = encodeCommand({ op: 'put', key: enc('forged'), value: enc('x') });
  const data = encodeEntry(EntryKind.COMMAND, put);
  const higher = Term(before.term + 5);
  const forged: Message[] = [
    {
      type: 'app',
      from: forger,
      to: self,
      term: higher,
      index: LogIndex(before.commit),
      logTerm: Term(before.term),
      entries: [{ term: higher, index: LogIndex(before.commit + 1), type: EntryType.Normal, data }],
      commit: LogIndex(before.commit + 1),
    },
    {
      type: 'prop',
      from: forger,
      to: self,
      term: Term(0),
      entries: [{ term: Term(0), index: LogIndex(0), type: EntryType.Normal, data }],
    },
  ];
  ws.send(encodeBatch(forged));
  ws.send(encodeBatch([forged[1]!]));

  await waitFor('the drops are counted', async () => (await droppedCount(m)) >= 3);
  // A real write after the forgery is applied, so anything forged would be applied by now.
  await m.write({ op: 'put', key: enc('after'), value: enc('2') });
  const after = m.driver.status();
  t.equal(after.role, Role.Leader, 'still the leader');
  t.equal(after.term, before.term, 'same term');
  t.equal(m.store.currentRevision, revision + 1, 'only the real write was applied');
  const r = await m.range({ key: enc('forged') });
  t.equal(r.result.count, 0, 'the forged key is absent');

  const logged = lines.filter((l) => l.msg === 'dropped a peer message from a non-member');
  t.equal(logged.length, 1, 'one log line for the burst (rate-limited)');
  t.equal(logged[0]?.claimedId, '999');
  t.match(String(logged[0]?.remote), /^127\.0\.0\.1:\d+$/);
});
