/**
 * A member that lost its data dir and restarts with its original flags: three members as
 * child processes; c is stopped, its data dir deleted, and c started again exactly as
 * before. It refuses to start (its peers know it as started) with a message saying how to
 * rejoin, the other two keep serving linearizable reads, and the rejoin it describes
 * (member remove, member add, start with --initial-cluster-state existing) works.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { waitFor } from './helpers.js';
import { ProcCluster } from './procs/cluster.js';
import { compileCli } from './procs/compile.js';
import { post, prefixMap, put } from './procs/http.js';

t.test('an emptied member refuses to start; the cluster serves; rejoin works', async (t) => {
  const root = t.testdir();
  const cli = await compileCli();
  const c = await ProcCluster.launch(cli, join(root, 'data'), ['a', 'b', 'c']);
  t.teardown(async () => {
    if (!t.passing()) t.comment(c.logs());
    await c.close();
  });
  // Generous: on a loaded machine a child process may take tens of seconds to start.
  await Promise.all(['a', 'b', 'c'].map((n) => c.waitUp(n, 90_000)));
  const a = c.get('a');
  await c.waitLeader(30_000);
  for (let i = 0; i < 10; i++) t.equal((await put(a.client, `k/${i}`, 'v')).status, 200);
  // Every member has published by now (it answers clients only once it has).
  const initial = [...c.members.values()].map((m) => `${m.name}=${m.peer}`).join(',');
  const originalFlags = [
    '--initial-cluster',
    initial,
    '--initial-advertise-peer-urls',
    c.get('c').peer,
    '--initial-cluster-token',
    'proc-test',
  ];

  const victim = c.get('c');
  await c.kill9('c');
  await rm(victim.dataDir, { recursive: true, force: true });
  victim.lines.length = 0;
  c.spawn('c', originalFlags);
  const outcome = await Promise.race([
    victim.exited.then(() => 'exited'),
    c.waitUp('c', 90_000).then(() => 'serving'),
  ]);
  t.equal(outcome, 'exited', 'c refused to start');
  t.not(victim.exitCode, 0, 'with a failure exit code');
  const said = victim.lines.join('\n');
  t.match(said, /has already been bootstrapped/);
  t.match(said, /member remove [0-9a-f]+/);
  t.match(said, /--initial-cluster-state existing/);

  for (const m of [c.get('a'), c.get('b')]) {
    const kv = await prefixMap(m.client, 'k/');
    t.equal(kv?.size, 10, `${m.name} serves a linearizable read`);
  }
  t.equal((await put(c.get('b').client, 'k/after', 'v')).status, 200, 'writes go on');

  // The rejoin the message describes.
  const list = await post(a.client, '/v3/cluster/member/list', {});
  const old = (list.body.members as Array<{ ID: string; name: string }>).find(
    (m) => m.name === 'c',
  )!;
  t.equal((await post(a.client, '/v3/cluster/member/remove', { ID: old.ID })).status, 200);
  const added = await post(a.client, '/v3/cluster/member/add', { peerURLs: [victim.peer] });
  t.equal(added.status, 200, JSON.stringify(added.body));
  await rm(victim.dataDir, { recursive: true, force: true });
  c.spawn('c', [
    '--initial-cluster',
    initial,
    '--initial-advertise-peer-urls',
    victim.peer,
    '--initial-cluster-state',
    'existing',
  ]);
  await c.waitUp('c', 90_000);
  await waitFor(
    'c caught up',
    async () => (await prefixMap(victim.client, 'k/'))?.size === 11,
    60_000,
    100,
  );
});
