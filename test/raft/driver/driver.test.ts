/** RaftDriver on one member, with fake transports and instrumented storage. */
import { Level } from 'level';
import t, { type Test } from 'tap';
import { EtceteraError } from '../../../src/errors.js';
import { RaftDriver } from '../../../src/raft/driver/driver.js';
import type { DriverTransport, RaftDriverOptions } from '../../../src/raft/driver/types.js';
import {
  LevelRaftStorage,
  type PersistableReady,
} from '../../../src/raft/storage/level-storage.js';
import { type ConfState, type Message, NodeId } from '../../../src/raft/types.js';
import { cmd, ListApp } from './cluster.js';
import { waitFor } from './helpers.js';

const ONE: ConfState = { voters: [NodeId(1)], learners: [] };
const THREE: ConfState = { voters: [NodeId(1), NodeId(2), NodeId(3)], learners: [] };
const noTransport: DriverTransport = { send: () => {} };

async function member(
  t: Test,
  conf: ConfState,
  extra: Partial<RaftDriverOptions> = {},
  dir = t.testdir(),
) {
  const db = new Level(dir);
  await db.open();
  const storage = await LevelRaftStorage.open(db, { bootstrap: conf });
  const app = new ListApp();
  const driver = new RaftDriver({
    id: NodeId(1),
    storage,
    transport: noTransport,
    app,
    heartbeatMs: 10,
    electionMs: 100,
    ...extra,
  });
  t.teardown(async () => {
    await driver.stop();
    await db.close();
  });
  return { db, storage, app, driver, dir };
}

t.test('a single member commits at once, and reloads everything on restart', async (t) => {
  const dir = t.testdir();
  const a = await member(t, ONE, {}, dir);
  await a.driver.start();
  const r = await a.driver.propose(cmd('hello'));
  t.match(r, { index: Number, term: Number });
  t.equal(r.outcome, 'hello#1', "the proposal resolves with the application's outcome for it");
  t.same(a.app.commands, ['hello'], 'the application sees the command without envelope');
  for (let i = 0; i < 5; i++) await a.driver.propose(cmd(`n${i}`));
  const before = a.driver.status();
  t.equal(before.role, 'leader');
  await a.driver.stop();
  await a.db.close();

  const b = await member(t, ONE, { appliedIndex: before.applied }, dir);
  await b.driver.start();
  await waitFor(() => b.driver.status().role === 'leader', 'leader again');
  t.ok(b.driver.status().term > before.term, 'hard state reloaded: a later term');
  t.equal(b.storage.lastIndex() >= before.lastIndex, true, 'log reloaded');
  t.same(b.app.commands, [], 'entries the application already applied are not handed again');
  await b.driver.propose(cmd('more'));
  t.same(b.app.commands, ['more']);
});

t.test('an application that lost its state gets the log replayed', async (t) => {
  const dir = t.testdir();
  const a = await member(t, ONE, {}, dir);
  await a.driver.start();
  for (let i = 0; i < 3; i++) await a.driver.propose(cmd(`n${i}`));
  await a.driver.stop();
  await a.db.close();
  const b = await member(t, ONE, {}, dir);
  await b.driver.start();
  await waitFor(() => b.app.commands.length === 3, 'replay');
  t.same(b.app.commands, ['n0', 'n1', 'n2']);
});

t.test('proposals made in one turn share one synced write', async (t) => {
  const a = await member(t, ONE);
  const writes: PersistableReady[] = [];
  const persist = a.storage.persist.bind(a.storage);
  a.storage.persist = (rd) => {
    writes.push(rd);
    return persist(rd);
  };
  await a.driver.start();
  await a.driver.propose(cmd('warm-up'));
  writes.length = 0;
  await Promise.all(Array.from({ length: 200 }, (_, i) => a.driver.propose(cmd(`p${i}`))));
  const withEntries = writes.filter((w) => w.entries.length > 0);
  t.ok(withEntries.length <= 2, `200 proposals in ${withEntries.length} write(s)`);
  t.ok(withEntries.every((w) => w.mustSync));
});

t.test('messages that depend on persistence wait for it', async (t) => {
  const order: string[] = [];
  const transport: DriverTransport = {
    send: (ms: readonly Message[]) => {
      for (const m of ms) order.push(`send ${m.type}`);
    },
  };
  const a = await member(t, THREE, { transport, raft: { preVote: false } });
  const persist = a.storage.persist.bind(a.storage);
  a.storage.persist = async (rd) => {
    order.push('persist start');
    await new Promise((r) => setTimeout(r, 30));
    await persist(rd);
    order.push('persist done');
  };
  await a.driver.start();
  a.driver.campaign();
  await waitFor(() => order.includes('send vote'), 'vote requests');
  t.ok(
    order.indexOf('persist done') < order.indexOf('send vote'),
    `the candidate's own vote is durable before it asks for votes: ${order.join(', ')}`,
  );
});

t.test('request failures: no leader, dropped, timeout, stopped', async (t) => {
  const lonely = await member(t, THREE, {}, `${t.testdir()}/lonely`);
  await lonely.driver.start();
  await t.rejects(lonely.driver.readIndex(), { code: 'ERR_NO_LEADER' });
  await t.rejects(lonely.driver.propose(cmd('x')), { code: 'ERR_RAFT_PROPOSAL_DROPPED' });

  let release: () => void = () => {};
  const held = new Promise<void>((r) => (release = r));
  const a = await member(t, ONE, { requestTimeoutMs: 100 }, `${t.testdir()}/slow`);
  a.app.apply = (entries) => held.then(() => entries.map(() => undefined)); // stalls until released
  await a.driver.start();
  await waitFor(() => a.driver.status().role === 'leader', 'leader');
  const slow = a.driver.propose(cmd('slow'));
  await t.rejects(slow, { code: 'ERR_TIMEOUT' }, 'outcome unknown after the timeout');
  const pending = a.driver.propose(cmd('pending'));
  const stopping = a.driver.stop();
  release();
  await stopping;
  await t.rejects(pending, { code: 'ERR_CLOSED' });
  await t.rejects(a.driver.propose(cmd('after')), { code: 'ERR_CLOSED' });
});

t.test('a storage failure stops the driver and fails waiting requests', async (t) => {
  const a = await member(t, ONE);
  await a.driver.start();
  await a.driver.propose(cmd('ok'));
  const errors: Error[] = [];
  a.driver.on('error', (e) => errors.push(e));
  a.storage.persist = async () => {
    throw new EtceteraError('ERR_STORAGE');
  };
  await t.rejects(a.driver.propose(cmd('lost')), { code: 'ERR_STORAGE' });
  t.equal(errors.length, 1, 'reported once');
  t.equal(a.driver.status().stopped, true);
  await t.rejects(a.driver.propose(cmd('x')), { code: 'ERR_CLOSED' });
});

t.test('leader changes are announced', async (t) => {
  const a = await member(t, ONE);
  const seen: string[] = [];
  a.driver.on('leaderChange', (c) => seen.push(`${c.leader}/${c.role}/${c.term}`));
  await a.driver.start();
  await waitFor(() => seen.some((s) => s.startsWith('1/leader')), 'leader event');
  t.match(seen[seen.length - 1], /^1\/leader\/[1-9]/);
});
