/**
 * Users, roles and the enabled flag are replicated state: a member that was down while they
 * changed gets them from the leader's snapshot, a restarted member keeps them, and a write
 * checked at an auth revision that changed before it applied is refused at apply on every
 * member (etcd's `revision of auth store is old`).
 */
import t from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import type { Caller } from '../../src/server/types.js';
import { enc } from './helpers.js';
import { LocalCluster } from './local-cluster.js';

const NOBODY: Caller = { user: undefined, revision: 0 };

t.test('auth state reaches a member from a snapshot and survives a restart', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a', 'b', 'c'], { snapshotCount: 20 });
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  const down = c.running().find((m) => m !== leader)!.config.name;
  await c.stopNode(down);

  const a = leader.auth;
  await a.userAdd(NOBODY, 'root', 'pw', false);
  await a.userGrantRole(NOBODY, 'root', 'root');
  await a.userAdd(NOBODY, 'alice', 'secret', false);
  await a.roleAdd(NOBODY, 'r');
  await a.roleGrantPermission(NOBODY, 'r', {
    permType: 'READWRITE',
    key: enc('s/'),
    rangeEnd: enc('s0'),
  });
  await a.userGrantRole(NOBODY, 'alice', 'r');
  await a.enable(NOBODY);
  const rootCaller: Caller = { user: 'root', revision: leader.store.auth.revision };
  for (let i = 0; i < 60; i++)
    await a.as(rootCaller).write({ op: 'put', key: enc(`s/${i}`), value: enc(String(i)) });
  t.ok(leader.driver.status().snapshotIndex > 0, 'the leader took a snapshot');

  const back = await c.startNode(down);
  await c.waitConverged(10_000);
  t.ok(
    c.node(down).lines.some((l) => l.msg === 'restored from snapshot'),
    'it caught up from a snapshot, not from the log',
  );
  t.ok(back.store.auth.enabled, 'auth is enabled there');
  t.same(back.store.auth.userNames(), ['alice', 'root']);
  t.same(back.store.auth.user('alice')?.roles, ['r']);
  t.equal(back.store.auth.revision, leader.store.auth.revision);
  const token = (await back.auth.authenticate('alice', 'secret')).token;
  const caller = await back.auth.identify({ token });
  t.equal(caller.user, 'alice', 'alice authenticates on the member that was down');
  const r = await back.auth.as(caller).range({ key: enc('s/'), rangeEnd: enc('s0') });
  t.equal(r.result.count, 60);
  await t.rejects(
    back.auth.as(caller).range({ key: enc('t') }),
    /permission denied/,
    'and is refused outside her grant there',
  );
  await t.rejects(back.auth.authenticate('alice', 'wrong'), /authentication failed/);

  // A restart keeps everything; tokens of the simple kind do not survive it (as in etcd).
  await c.stopNode(down);
  const again = await c.startNode(down);
  await c.waitConverged(10_000);
  t.ok(again.store.auth.enabled);
  t.same(again.store.auth.userNames(), ['alice', 'root']);
  await t.rejects(again.auth.identify({ token }), /invalid auth token/);
  t.ok((await again.auth.authenticate('alice', 'secret')).token.length > 0);
});

t.test('a write checked at an older auth revision is refused at apply', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a']);
  t.teardown(() => c.close());
  const m = await c.waitLeader();
  const a = m.auth;
  await a.userAdd(NOBODY, 'root', 'pw', false);
  await a.userGrantRole(NOBODY, 'root', 'root');
  await a.enable(NOBODY);
  const old = m.store.auth.revision;
  await a.roleAdd({ user: 'root', revision: old }, 'later');
  const before = m.store.currentRevision;
  try {
    // What a view proposes for a caller checked before the role was added.
    await m.write({
      op: 'put',
      key: enc('k'),
      value: enc('v'),
      auth: { user: 'root', revision: old },
    });
    t.fail('the stale write applied');
  } catch (e) {
    t.ok(isEtceteraError(e, 'ERR_AUTH_OLD_REVISION'), 'refused: revision of auth store is old');
  }
  t.equal(m.store.currentRevision, before, 'nothing changed');
  try {
    await m.write({ op: 'put', key: enc('k'), value: enc('v'), auth: { user: '', revision: 0 } });
    t.fail('a write without a user applied');
  } catch (e) {
    t.ok(isEtceteraError(e, 'ERR_USER_EMPTY'), 'a write proposed with no user is refused at apply');
  }
  const now = { user: 'root', revision: m.store.auth.revision };
  await m.write({ op: 'put', key: enc('k'), value: enc('v'), auth: now });
  t.equal(m.store.currentRevision, before + 1, 'at the current auth revision it applies');
});
