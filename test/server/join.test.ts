/**
 * Membership through the command line and the JSON API, with members as child processes:
 * `member add` a learner over HTTP, start it with --initial-cluster-state existing, promote
 * it, remove an original member (whose process then exits by itself); writes go on.
 */
import { join } from 'node:path';
import t from 'tap';
import { waitFor } from './helpers.js';
import { ProcCluster } from './procs/cluster.js';
import { compileCli } from './procs/compile.js';
import { post, prefixMap, put } from './procs/http.js';

interface MemberJson {
  ID: string;
  name?: string;
  isLearner?: boolean;
  peerURLs?: string[];
}

t.test('learner join, promote, remove over the JSON API', async (t) => {
  const root = t.testdir();
  const cli = await compileCli();
  const c = await ProcCluster.start(cli, join(root, 'data'), ['a', 'b', 'c']);
  t.teardown(async () => {
    if (!t.passing()) t.comment(c.logs());
    await c.close();
  });
  const leader = await c.waitLeader();
  const via = c.get(leader).client;
  for (let i = 0; i < 10; i++) await put(via, `j/${i}`, String(i));

  const d = await c.define('d', join(root, 'data'));
  const add = await post(c.get('b').client, '/v3/cluster/member/add', {
    peerURLs: [d.peer],
    isLearner: true,
  });
  t.equal(add.status, 200, 'member add --learner through a follower');
  const added = add.body.member as MemberJson;
  t.equal(added.isLearner, true);
  const initialCluster = [...c.members.values()].map((m) => `${m.name}=${m.peer}`).join(',');
  c.spawn('d', [
    '--initial-cluster',
    initialCluster,
    '--initial-advertise-peer-urls',
    d.peer,
    '--initial-cluster-state',
    'existing',
    '--initial-cluster-token',
    'proc-test',
  ]);
  await c.waitUp('d');
  await waitFor(
    'the learner to catch up',
    async () => (await prefixMap(d.client, 'j/', true))?.size === 10,
    15_000,
    100,
  );
  const refused = await put(d.client, 'x', '1');
  t.equal(refused.body.message, 'etcdserver: rpc not supported for learner');

  const promote = await post(via, '/v3/cluster/member/promote', { ID: added.ID });
  t.equal(promote.status, 200, 'member promote');
  await waitFor(
    'd to take writes as a voter',
    async () => (await put(d.client, 'from/d', '1')).status === 200,
    10_000,
    100,
  );

  const victim = ['a', 'b', 'c'].find((n) => n !== leader)!;
  const list = await post(via, '/v3/cluster/member/list', {});
  const victimId = (list.body.members as MemberJson[]).find((m) => m.name === victim)!.ID;
  const removed = await post(via, '/v3/cluster/member/remove', { ID: victimId });
  t.equal(removed.status, 200, 'member remove');
  t.equal((removed.body.members as MemberJson[]).length, 3);
  await c.get(victim).exited;
  t.equal(c.get(victim).exitCode, 0, 'the removed member stopped and exited by itself');

  for (const m of c.running()) t.equal((await put(m.client, `after/${m.name}`, 'ok')).status, 200);
  const after = await prefixMap(d.client, 'after/');
  t.equal(after?.size, 3, 'the three remaining members serve writes');
});
