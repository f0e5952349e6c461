/**
 * The `etcd3` npm client (gRPC) against a server: its KV and txn builder, a watch that
 * resumes after the member restarts (etcd: killed with -9; etcetera: a member in this
 * process, stopped and opened again on its data dir and port), a lease kept alive past its
 * TTL by the client's keep-alive stream, and its election and lock recipes. Run against the
 * real etcd 3.4 (skipped with the reason printed where it is not installed) and against
 * etcetera's gRPC face.
 */

import { Etcd3, EtcdLockFailedError } from 'etcd3';
import t, { type Test } from 'tap';
import { resolveConfig } from '../../src/server/config.js';
import { silentLogger } from '../../src/server/logger.js';
import { Member } from '../../src/server/member.js';
import { etcdUnavailable, freePort, startEtcd, waitHealthy } from '../api/servers.js';

interface Server {
  url: string;
  /** Stops the member (etcd: kill -9) and starts it again on the same data dir and ports. */
  crashAndRestart(): Promise<void>;
  close(): Promise<void>;
}

interface Flavour {
  name: string;
  skip: string | false;
  start(dir: string): Promise<Server>;
}

async function startRealEtcd(dir: string): Promise<Server> {
  let etcd = await startEtcd(dir);
  return {
    url: etcd.url,
    async crashAndRestart() {
      process.kill(etcd.pid, 'SIGKILL');
      await etcd.close();
      etcd = await startEtcd(dir, etcd.ports);
    },
    close: () => etcd.close(),
  };
}

/** An etcetera member in this process; a restart stops it and opens its data dir again. */
async function startEtcetera(dir: string): Promise<Server> {
  const [client, peer] = [await freePort(), await freePort()];
  const config = resolveConfig({
    name: 'default',
    dataDir: dir,
    listenClientUrls: `http://127.0.0.1:${client}`,
    listenPeerUrls: `http://127.0.0.1:${peer}`,
    initialAdvertisePeerUrls: `http://127.0.0.1:${peer}`,
    initialCluster: `default=http://127.0.0.1:${peer}`,
    heartbeatMs: 20,
    electionMs: 500,
    logLevel: 'silent',
  });
  const url = `http://127.0.0.1:${client}`;
  const start = async () => {
    const m = await Member.start(config, { logger: silentLogger() });
    await waitHealthy(url, 10_000);
    return m;
  };
  let member = await start();
  return {
    url,
    async crashAndRestart() {
      await member.stop();
      member = await start();
    },
    close: () => member.stop(),
  };
}

const FLAVOURS: Flavour[] = [
  { name: 'etcd', skip: etcdUnavailable() ?? false, start: startRealEtcd },
  { name: 'etcetera', skip: false, start: startEtcetera },
];

const until = async (cond: () => boolean | Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

function client(t: Test, server: Server): Etcd3 {
  const c = new Etcd3({ hosts: server.url });
  t.teardown(() => c.close());
  return c;
}

for (const flavour of FLAVOURS) {
  t.test(`etcd3 against ${flavour.name}`, { skip: flavour.skip }, async (t) => {
    const setup = async (t: Test) => {
      const server = await flavour.start(t.testdir());
      t.teardown(() => server.close());
      return server;
    };

    t.test('kv and the txn builder', async (t) => {
      const server = await setup(t);
      const c = client(t, server);
      await c.put('app/a').value('1');
      await c.put('app/b').value('2');
      t.equal(await c.get('app/a').string(), '1');
      t.same(await c.getAll().prefix('app/').strings(), { 'app/a': '1', 'app/b': '2' });
      t.equal(await c.getAll().prefix('app/').count(), 2);
      const won = await c.if('app/a', 'Value', '==', '1').then(c.put('app/a').value('3')).commit();
      t.equal(won.succeeded, true);
      const lost = await c.if('app/a', 'Value', '==', '1').then(c.put('app/a').value('4')).commit();
      t.equal(lost.succeeded, false);
      t.equal(await c.get('app/a').string(), '3');
      t.equal((await c.delete().prefix('app/')).deleted, '2');
      t.equal(await c.get('app/a').string(), null);
    });

    t.test('a watch resumes after the member restarts, every event once', async (t) => {
      const server = await setup(t);
      const c = client(t, server);
      const seen: string[] = [];
      const watcher = await c.watch().prefix('w/').create();
      watcher.on('put', (kv) => seen.push(`${kv.key.toString()}@${kv.mod_revision}`));
      watcher.on('error', () => undefined);
      const write = async (round: number) => {
        const w = new Etcd3({ hosts: server.url });
        for (let i = 0; i < 5; i++) await w.put(`w/${round}/${i}`).value('x');
        w.close();
      };
      await write(0);
      await until(() => seen.length === 5);
      await server.crashAndRestart();
      await write(1);
      await until(() => seen.length === 10);
      await new Promise((r) => setTimeout(r, 300));
      await watcher.cancel();
      const revs = seen.map((s) => Number(s.split('@')[1]));
      t.same(
        revs,
        Array.from({ length: 10 }, (_, i) => i + 2),
        'revisions 2..11 in order, none twice',
      );
    });

    t.test('a lease outlives its TTL while kept alive, and its key goes with it', async (t) => {
      const server = await setup(t);
      const c = client(t, server);
      const lease = c.lease(2);
      let renewals = 0;
      lease.on('keepaliveSucceeded', () => renewals++);
      await lease.put('leased').value('v');
      const id = await lease.grant();
      await new Promise((r) => setTimeout(r, 4500));
      t.ok(renewals >= 2, `renewed ${renewals} times`);
      t.equal(await c.get('leased').string(), 'v', 'still there after twice its TTL');
      t.equal(lease.revoked(), false);
      await lease.revoke();
      t.equal(await c.get('leased').string(), null, 'gone with the lease');
      t.not(id, '0', 'a lease ID from the server');
    });

    t.test('election: one leader at a time, the next after a resign', async (t) => {
      const server = await setup(t);
      const a = client(t, server);
      const b = client(t, server);
      const observer = await a.election('job').observe();
      const changes: string[] = [];
      observer.on('change', (leader) => changes.push(leader ?? ''));
      const first = a.election('job', 2).campaign('alpha');
      await new Promise<void>((resolve, reject) => {
        first.on('elected', () => resolve());
        first.on('error', reject);
      });
      const second = b.election('job', 2).campaign('beta');
      let betaElected = false;
      second.on('elected', () => {
        betaElected = true;
      });
      second.on('error', () => undefined);
      await new Promise((r) => setTimeout(r, 500));
      t.equal(betaElected, false, 'beta waits while alpha leads');
      t.equal(await b.election('job').leader(), 'alpha');
      await first.resign();
      await until(() => betaElected);
      t.equal(await a.election('job').leader(), 'beta');
      await until(() => changes.includes('beta'));
      await observer.cancel();
      await second.resign();
    });

    t.test('lock: held by one client, refused to another until released', async (t) => {
      const server = await setup(t);
      const a = client(t, server);
      const b = client(t, server);
      const held = await a.lock('resource').ttl(5).acquire();
      const refused = await b
        .lock('resource')
        .ttl(5)
        .acquire()
        .catch((e: unknown) => e);
      t.ok(refused instanceof EtcdLockFailedError, 'the second acquire fails');
      await held.release();
      const next = await b
        .lock('resource')
        .ttl(5)
        .acquire()
        .catch((e: unknown) => e);
      t.notOk(next instanceof Error, 'acquired after the release');
      if (!(next instanceof Error)) await (next as typeof held).release();
    });
  });
}
