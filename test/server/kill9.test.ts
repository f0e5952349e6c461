/**
 * Three members as child processes on loopback. kill -9 the leader in the middle of a write
 * load sent through every member: a new leader is elected within about two seconds, every
 * acknowledged write is on both survivors, and the killed member, restarted with no cluster
 * flags, catches up from a snapshot (--snapshot-count 50) and then from the log.
 */
import { join } from 'node:path';
import t from 'tap';
import { waitFor } from './helpers.js';
import { ProcCluster } from './procs/cluster.js';
import { compileCli } from './procs/compile.js';
import { prefixMap, put } from './procs/http.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `workers` loops of puts spread over `urls` until `stop()`; records what was acknowledged. */
function writeLoad(urls: () => string[], workers: number, maxPerWorker: number) {
  const acked = new Map<string, string>();
  const ackedAt: number[] = [];
  let stopped = false;
  let failed = 0;
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; i < maxPerWorker && !stopped; i++) {
      const targets = urls();
      const url = targets[(w + i) % targets.length]!;
      const key = `load/${w}/${String(i).padStart(5, '0')}`;
      const value = `${w}:${i}`;
      const a = await put(url, key, value, 3000);
      if (a.status === 200) {
        acked.set(key, value);
        ackedAt.push(Date.now());
      } else {
        failed++;
        await sleep(10);
      }
    }
  });
  return {
    acked,
    ackedAt,
    failed: () => failed,
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

t.test('kill -9 the leader under load; nothing acknowledged is lost', async (t) => {
  const root = t.testdir();
  const cli = await compileCli();
  const c = await ProcCluster.start(
    cli,
    join(root, 'data'),
    ['a', 'b', 'c'],
    ['--snapshot-count', '50'],
  );
  t.teardown(async () => {
    if (!t.passing()) t.comment(c.logs());
    await c.close();
  });
  const leader = await c.waitLeader();
  for (const m of c.running()) {
    t.equal(
      (await put(m.client, `hello/${m.name}`, m.name)).status,
      200,
      `a write through ${m.name}`,
    );
  }

  const load = writeLoad(() => c.running().map((m) => m.client), 6, 5000);
  await sleep(500);
  const killedAt = Date.now();
  await c.kill9(leader);
  const next = await c.waitLeader(5000);
  const electionMs = Date.now() - killedAt;
  t.not(next, leader);
  t.ok(electionMs < 3000, `a new leader (${next}) ${electionMs} ms after kill -9`);
  const electedAt = Date.now();
  await waitFor(
    'a write acknowledged under the new leader',
    () => load.ackedAt.some((at) => at > electedAt),
    5000,
  );
  await load.stop();
  t.comment(`${load.acked.size} writes acknowledged, ${load.failed()} failed or unanswered`);

  // Enough further writes that the leader snapshots and compacts past the killed member.
  const survivors = c.running().map((m) => m.client);
  const more = Array.from({ length: 16 }, async (_, w) => {
    for (let i = 0; i < 10; i++) {
      const key = `more/${w}/${i}`;
      const a = await put(survivors[i % survivors.length]!, key, 'x');
      if (a.status === 200) load.acked.set(key, 'x');
    }
  });
  await Promise.all(more);

  for (const m of c.running()) {
    const got = new Map(
      [...((await prefixMap(m.client, 'load/')) ?? [])].concat([
        ...((await prefixMap(m.client, 'more/')) ?? []),
      ]),
    );
    const missing = [...load.acked].filter(([k, v]) => got.get(k) !== v);
    t.equal(missing.length, 0, `every acknowledged write is on ${m.name}`);
  }

  // Restart the killed member with no cluster flags: it rejoins and catches up.
  c.spawn(leader);
  await c.waitUp(leader);
  const back = c.get(leader);
  await waitFor(
    `${leader} to catch up`,
    async () => {
      const a = (await prefixMap(back.client, 'load/', true)) ?? new Map();
      const b = (await prefixMap(back.client, 'more/', true)) ?? new Map();
      return [...load.acked].every(([k, v]) => (a.get(k) ?? b.get(k)) === v);
    },
    15_000,
    100,
  );
  t.ok(
    back.lines.some((l) => l.includes('"restored from snapshot"')),
    'the restarted member caught up from a snapshot',
  );
  t.equal((await put(back.client, 'after/restart', '1')).status, 200, 'and serves writes again');
});
