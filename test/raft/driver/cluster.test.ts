/** Three drivers on real loopback sockets with LevelDB storage. */
import t, { type Test } from 'tap';
import { Cluster, cmd } from './cluster.js';

const dirs = (t: Test) => [1, 2, 3].map((i) => `${t.testdir()}/m${i}`);

t.test('elects a leader and replicates proposals from any member', async (t) => {
  const c = await Cluster.start(dirs(t));
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  t.ok(leader, `leader ${leader.id}`);
  const results = await Promise.all(
    Array.from({ length: 60 }, (_, i) => c.get((i % 3) + 1).driver.propose(cmd(`c${i}`))),
  );
  const indexes = results.map((r) => r.index);
  t.equal(new Set(indexes).size, 60, 'each proposal has its own index');
  await c.waitApplied(60);
  const lists = c.running().map((m) => m.app.commands.join(','));
  t.equal(new Set(lists).size, 1, 'every member applied the same sequence');
  t.same([...c.get(1).app.commands].sort(), Array.from({ length: 60 }, (_, i) => `c${i}`).sort());
});
