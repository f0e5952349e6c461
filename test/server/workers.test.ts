/**
 * `etcetera serve --workers 2` as real processes: both workers serve the client port (two
 * worker PIDs answer), a write through one worker is seen by a watcher on the other, and a
 * worker killed with SIGKILL under a stream of puts is restarted while its clients' watches
 * (src/client, gRPC, resuming from their revision) see every revision exactly once, in order.
 */
import { statSync } from 'node:fs';
import type { Agent, ClientRequest } from 'node:http';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import t from 'tap';
import { Client, text } from '../../src/client/index.js';
import { waitFor } from './helpers.js';
import { compileCli } from './procs/compile.js';
import { b64, unb64 } from './procs/http.js';
import {
  call,
  MemberExited,
  oneConnection,
  servedBy,
  startWorkersMember,
  type WorkersMember,
} from './procs/workers.js';

const cli = await compileCli();
const dir = t.testdir();
const m: WorkersMember = await startWorkersMember(cli, dir, 2);
t.teardown(() => m.close());
t.afterEach((t) => {
  if (t.passing()) return;
  t.comment(m.lines.slice(-80).join('\n'));
});

/** An etcd JSON watch stream (POST /v3/watch) on `agent`'s one connection. */
function jsonWatch(agent: Agent, key: string, rangeEnd: string) {
  const seen: { key: string; rev: number }[] = [];
  let created!: () => void;
  const ready = new Promise<void>((r) => (created = r));
  const req: ClientRequest = request(
    new URL('/v3/watch', m.url),
    { method: 'POST', agent },
    (res) => {
      let buf = '';
      res.on('data', (c: Buffer) => {
        buf += c.toString('utf8');
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line === '') continue;
          const r = (JSON.parse(line) as { result?: Record<string, unknown> }).result ?? {};
          if (r.created === true) created();
          const events = (r.events as { kv: { key: string; mod_revision: string } }[]) ?? [];
          for (const e of events)
            seen.push({ key: unb64(e.kv.key), rev: Number(e.kv.mod_revision) });
        }
      });
    },
  );
  req.on('error', () => undefined);
  req.write(JSON.stringify({ create_request: { key: b64(key), range_end: b64(rangeEnd) } }));
  return { seen, ready, close: () => req.destroy() };
}

t.test(
  'both workers serve the client port; a write through one reaches a watcher on the other',
  async (t) => {
    const pool = m.pids();
    t.equal(pool.size, 2, 'two workers listen');
    const sock = join(dir, 'w', 'workers', 'member.sock');
    t.equal(statSync(sock).mode & 0o777, 0o600, "the member's socket is its user's alone");
    t.equal(statSync(dirname(sock)).mode & 0o777, 0o700, 'in a folder of its own');
    t.notOk([...pool.values()].includes(m.child.pid ?? -1), 'neither is the member process');
    // Connections are handed to the workers in turn: two agents (one connection each) that
    // different workers serve.
    const agents: { agent: Agent; pid: number }[] = [];
    for (let i = 0; i < 10 && new Set(agents.map((a) => a.pid)).size < 2; i++) {
      const agent = oneConnection();
      agents.push({ agent, pid: await servedBy(agent, m.url) });
    }
    t.teardown(() => {
      for (const a of agents) a.agent.destroy();
    });
    const served = new Set(agents.map((a) => a.pid));
    t.same([...served].sort(), [...pool.values()].sort(), 'both worker PIDs served requests');
    const a = agents[0]!;
    const b = agents.find((x) => x.pid !== a.pid)!;
    const watch = jsonWatch(a.agent, 'cross/', 'cross0');
    t.teardown(() => watch.close());
    await watch.ready;
    const put = await call(b.agent, m.url, 'POST', '/v3/kv/put', {
      key: b64('cross/1'),
      value: b64('from the other worker'),
    });
    t.equal(put.status, 200, `put through worker ${b.pid}`);
    t.equal(await servedBy(b.agent, m.url), b.pid, 'and it was that worker');
    const rev = Number((JSON.parse(put.text) as { header: { revision: string } }).header.revision);
    await waitFor('the watcher on the other worker', () => watch.seen.length > 0, 20_000);
    t.same(watch.seen, [{ key: 'cross/1', rev }], `seen by the watcher on worker ${a.pid}`);
    // The watch holds `a`'s connection: read back over another one that worker serves.
    let c: { agent: Agent; pid: number } | undefined;
    for (let i = 0; i < 10 && c?.pid !== a.pid; i++) {
      const agent = oneConnection();
      agents.push({ agent, pid: await servedBy(agent, m.url) });
      c = agents.at(-1);
    }
    t.equal(c?.pid, a.pid, 'another connection to the watching worker');
    const got = await call(c!.agent, m.url, 'POST', '/v3/kv/range', { key: b64('cross/1') });
    const kvs = (JSON.parse(got.text) as { kvs?: { value: string }[] }).kvs ?? [];
    t.same(
      kvs.map((kv) => unb64(kv.value)),
      ['from the other worker'],
      'and read back through it',
    );
  },
);

t.test(
  'kill -9 of each worker under puts: restarted, watches see every revision once',
  async (t) => {
    const watchers = Array.from({ length: 4 }, () => new Client({ endpoints: [m.url] }));
    const writer = new Client({ endpoints: [m.url], timeoutMs: 5000 });
    t.teardown(() => {
      for (const c of [...watchers, writer]) c.close();
    });
    const start = (await writer.put('load-start', 'x')).header.revision + 1;
    const seen: number[][] = watchers.map(() => []);
    const watches = watchers.map((c, i) =>
      c.watch('load/', { prefix: true, startRevision: start }, (batch) => {
        for (const e of batch.events) seen[i]?.push(e.kv.modRevision);
      }),
    );
    t.teardown(() => Promise.all(watches.map((w) => w.close())));
    await Promise.all(watches.map((w) => w.ready));

    let writing = true;
    let n = 0;
    const load = (async () => {
      while (writing) {
        // A put cut by the kill may or may not have been applied: each attempt takes a new
        // key, so the store's keys are the truth the watches are checked against.
        await writer.put(`load/${String(n++).padStart(5, '0')}`, 'v').catch(() => undefined);
      }
    })();
    const wrote = async (k: number) => {
      const from = n;
      await waitFor(`${k} more puts`, () => n >= from + k, 30_000);
    };
    await wrote(30);
    const before = m.pids();
    for (const slot of [0, 1]) {
      const pid = m.pids().get(slot)!;
      process.kill(pid, 'SIGKILL');
      await waitFor(
        `worker ${slot} to be restarted`,
        () => (m.pids().get(slot) ?? pid) !== pid,
        60_000,
        50,
      );
      await wrote(30);
    }
    writing = false;
    await load;
    const after = m.pids();
    for (const slot of [0, 1])
      t.not(after.get(slot), before.get(slot), `worker ${slot} is a new process`);
    t.equal(
      m.records('worker exited; restarting').filter((r) => r.signal === 'SIGKILL').length,
      2,
      'each kill was logged with its signal',
    );

    const all = await writer.get('load/', { prefix: true });
    const expected = all.kvs.map((kv) => kv.modRevision).sort((x, y) => x - y);
    t.ok(expected.length >= 90, `${expected.length} puts were applied`);
    const last = expected.at(-1)!;
    await waitFor(
      'every watcher to reach the last revision',
      () => seen.every((s) => (s.at(-1) ?? 0) >= last),
      60_000,
    );
    for (const [i, s] of seen.entries())
      t.same(s, expected, `watcher ${i}: every revision exactly once, in order`);
    t.equal(text(all.kvs[0]!.value), 'v');
  },
);

t.test('a worker that cannot listen stops the member before it serves', async (t) => {
  // Anyone else's listener on the port; what connects to it (the helper's polling) is dropped.
  const taken = createServer((socket) => socket.destroy());
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => taken.close(() => r())));
  const port = (taken.address() as { port: number }).port;
  const e = await startWorkersMember(cli, join(dir, 'taken'), 1, [], port).then(
    async (other) => {
      await other.close();
      return undefined;
    },
    (err: unknown) => err,
  );
  t.ok(e instanceof MemberExited, 'the member exited');
  const exited = e as MemberExited;
  t.equal(exited.code, 1, 'with code 1');
  t.match(
    exited.lines.join('\n'),
    /a worker process failed to start.*EADDRINUSE/s,
    'naming ERR_WORKER_START and the cause',
  );
});
