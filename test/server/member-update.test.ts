/**
 * MemberUpdate on three members as child processes: `etcetera member update` moves a
 * follower's peer URL to a new port through Raft; every member's list shows the new URL, the
 * follower restarted listening only on the new port is dialled there (with the third member
 * stopped, nothing commits unless the other member reaches it), and the old port is dead.
 */
import { join } from 'node:path';
import t from 'tap';
import { runCli } from '../client/run-cli.js';
import { freePorts, waitFor } from './helpers.js';
import { ProcCluster } from './procs/cluster.js';
import { compileCli } from './procs/compile.js';
import { post, prefixMap, put, status } from './procs/http.js';

const cli = (args: string[]) => runCli(args);

interface JsonMember {
  ID: string;
  name?: string;
  peerURLs?: string[];
}

async function memberList(client: string): Promise<JsonMember[]> {
  const a = await post(client, '/v3/cluster/member/list', {});
  return (a.body.members as JsonMember[] | undefined) ?? [];
}

const hex = (decimal: string) => BigInt(decimal).toString(16);

t.test(
  'member update moves a follower to a new peer port; the cluster keeps committing',
  async (t) => {
    const root = t.testdir();
    const cli0 = await compileCli();
    const c = await ProcCluster.start(cli0, join(root, 'data'), ['a', 'b', 'c']);
    t.teardown(async () => {
      if (!t.passing()) t.comment(c.logs());
      await c.close();
    });
    const leader = await c.waitLeader(30_000);
    const moved = ['a', 'b', 'c'].find((n) => n !== leader)!;
    const third = ['a', 'b', 'c'].find((n) => n !== leader && n !== moved)!;
    const m = c.get(moved);
    const id = (await status(m.client))!.memberId;
    const oldPeer = m.peer;
    const [port] = await freePorts(1);
    const newPeer = `http://127.0.0.1:${port}`;

    // Bad input first: it changes nothing.
    const taken = await cli([
      'member',
      'update',
      hex(id),
      `--peer-urls=${c.get(third).peer}`,
      `--endpoints=${c.get(leader).client}`,
    ]);
    t.equal(taken.code, 1);
    t.match(taken.err, 'etcdserver: Peer URLs already exists');
    const unknown = await cli([
      'member',
      'update',
      'abc',
      `--peer-urls=${newPeer}`,
      `--endpoints=${c.get(leader).client}`,
    ]);
    t.equal(unknown.code, 1);
    t.match(unknown.err, 'etcdserver: member not found');
    t.same(
      (await memberList(c.get(leader).client)).find((x) => x.ID === id)?.peerURLs,
      [oldPeer],
      'refused updates changed nothing',
    );

    // Through the third member (a follower), as etcdctl would be pointed at any member.
    const r = await cli([
      'member',
      'update',
      hex(id),
      `--peer-urls=${newPeer}`,
      `--endpoints=${c.get(third).client}`,
    ]);
    t.equal(r.code, 0, r.err);
    const clusterId = (await post(c.get(third).client, '/v3/cluster/member/list', {})).body
      .header as { cluster_id: string };
    t.equal(
      r.out,
      `Member ${hex(id).padStart(16)} updated in cluster ${hex(clusterId.cluster_id).padStart(16)}\n`,
    );
    for (const n of ['a', 'b', 'c']) {
      await waitFor(
        `${n} to list the new peer URL`,
        async () =>
          (await memberList(c.get(n).client)).find((x) => x.ID === id)?.peerURLs?.[0] === newPeer,
        30_000,
      );
    }

    // The moved member restarts on the new port only (no cluster flags: its data dir says who
    // it is); its old port is closed for good.
    await c.terminate(moved);
    m.peer = newPeer;
    c.spawn(moved);
    await c.waitUp(moved, 90_000);
    t.equal((await fetch(oldPeer).catch((e: Error) => e)) instanceof Error, true, 'old port dead');

    // Stop the third member: the two left commit only if the other one reaches the moved
    // member at its new URL.
    await c.terminate(third);
    await c.waitLeader(30_000);
    for (let i = 0; i < 10; i++) {
      const via = i % 2 === 0 ? c.get(moved).client : c.get(leader).client;
      let ok = false;
      await waitFor(
        `write ${i} to commit`,
        async () => (ok = (await put(via, `after/${i}`, String(i), 5000)).status === 200),
        30_000,
        100,
      );
      t.ok(ok, `write ${i} committed`);
    }
    for (const n of [moved, leader]) {
      await waitFor(
        `${n} to apply every write`,
        async () => (await prefixMap(c.get(n).client, 'after/', true))?.size === 10,
        30_000,
      );
    }
    t.same(
      (await memberList(c.get(moved).client)).find((x) => x.ID === id)?.peerURLs,
      [newPeer],
      'the moved member lists its new URL too',
    );
  },
);
