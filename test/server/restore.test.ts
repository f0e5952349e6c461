/**
 * `etcetera snapshot restore`: a snapshot that the real etcd made becomes a member's data dir
 * from which etcetera serves the same keys at the same revisions (etcd's 63-bit lease IDs
 * mapped to their low 53 bits); an etcetera snapshot restored on three members gives a
 * cluster that serves the same history and goes on from its revision; a truncated or
 * damaged file, or an existing data dir, is refused with a clear error and creates nothing.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { Client } from '../../src/client/index.js';
import { saveSnapshot } from '../../src/client/snapshot.js';
import { isEtceteraError } from '../../src/errors.js';
import { restoreSnapshot } from '../../src/server/restore.js';
import { etcdUnavailable, startEtcd } from '../api/servers.js';
import { runCli } from '../client/run-cli.js';
import { freePorts, startSingle } from './helpers.js';
import { LocalCluster } from './local-cluster.js';
import { etcdctlUnavailable, historyOf, writeHistory } from './snapshot-history.js';

const SINGLE = {
  name: 'm1',
  initialCluster: 'm1=http://127.0.0.1:1',
  initialAdvertisePeerUrls: 'http://127.0.0.1:1',
};

const cli = (args: string[]) => runCli(args);

const low53 = (id: string) => {
  const n = BigInt(id);
  return n < 2n ** 53n ? id : String(n & (2n ** 53n - 1n) || 1n);
};

t.test(
  'an etcd snapshot → etcetera snapshot restore → a member serves the same',
  { skip: etcdUnavailable() ?? etcdctlUnavailable() ?? false },
  async (t) => {
    const dir = t.testdir();
    const etcd = await startEtcd(join(dir, 'etcd'));
    t.teardown(() => etcd.close());
    const theirs = new Client({ endpoints: [etcd.url] });
    t.teardown(() => theirs.close());
    const written = await writeHistory(theirs);
    const before = await historyOf(theirs, written.compacted, low53);
    const file = join(dir, 'etcd.db');
    await new Promise<void>((resolve, reject) =>
      execFile(
        'etcdctl',
        [`--endpoints=${etcd.url.replace('http://', '')}`, 'snapshot', 'save', file],
        { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 60_000 },
        (e) => (e ? reject(e) : resolve()),
      ),
    );
    const dataDir = join(dir, 'restored');
    const r = await cli([
      'snapshot',
      'restore',
      file,
      `--name=${SINGLE.name}`,
      `--data-dir=${dataDir}`,
      `--initial-cluster=${SINGLE.initialCluster}`,
      `--initial-advertise-peer-urls=${SINGLE.initialAdvertisePeerUrls}`,
    ]);
    t.equal(r.code, 0, r.err);
    t.match(r.out, `revision ${before.revision} (compacted at ${written.compacted})`);
    t.match(r.out, /2 lease IDs beyond 2\^53 were given new IDs/);
    const m = await startSingle(dataDir);
    t.teardown(() => m.stop());
    const ours = new Client({ endpoints: [m.clientUrls[0]!.href] });
    t.teardown(() => ours.close());
    t.same(
      await historyOf(ours, written.compacted),
      before,
      'the same history, revision and leases',
    );
    const next = await ours.put('after-restore', 'x');
    t.equal(next.header.revision, before.revision + 1, 'writes go on from the revision');
  },
);

t.test('an etcetera snapshot restored on three members serves the same history', async (t) => {
  const dir = t.testdir();
  const source = await startSingle(join(dir, 'source'));
  const c = new Client({ endpoints: [source.clientUrls[0]!.href] });
  const written = await writeHistory(c, 20);
  const before = await historyOf(c, written.compacted);
  const file = join(dir, 'snap.db');
  await saveSnapshot(c.snapshot(), file);
  c.close();
  await source.stop();

  const cluster = new LocalCluster(join(dir, 'cluster'));
  t.teardown(() => cluster.close());
  const names = ['a', 'b', 'c'];
  const ports = await freePorts(6);
  const initialCluster = names.map((n, i) => `${n}=http://127.0.0.1:${ports[2 * i + 1]}`).join(',');
  const ids = new Set<string>();
  for (const [i, name] of names.entries()) {
    const node = cluster.define(
      name,
      { client: ports[2 * i]!, peer: ports[2 * i + 1]! },
      { initialCluster },
    );
    const r = await restoreSnapshot({
      file,
      name,
      dataDir: node.config.dataDir,
      initialCluster,
      initialAdvertisePeerUrls: `http://127.0.0.1:${ports[2 * i + 1]}`,
      initialClusterToken: 'local-test',
    });
    t.equal(r.revision, before.revision);
    ids.add(r.clusterId);
  }
  t.equal(ids.size, 1, 'every member derives the same cluster ID');
  await Promise.all(names.map((n) => cluster.startNode(n)));
  await cluster.waitLeader(20_000);
  for (const name of names) {
    const client = new Client({ endpoints: [cluster.member(name).clientUrls[0]!.href] });
    t.same(await historyOf(client, written.compacted), before, `${name} serves the same history`);
    client.close();
  }
  const any = new Client({ endpoints: [cluster.member('b').clientUrls[0]!.href] });
  t.equal((await any.put('next', 'x')).header.revision, before.revision + 1);
  t.equal((await any.memberList()).members.length, 3);
  any.close();
});

t.test(
  'truncated or damaged snapshots and existing data dirs are refused, creating nothing',
  async (t) => {
    const dir = t.testdir();
    const source = await startSingle(join(dir, 'source'));
    const c = new Client({ endpoints: [source.clientUrls[0]!.href] });
    await writeHistory(c, 60);
    const file = join(dir, 'snap.db');
    await saveSnapshot(c.snapshot(), file);
    c.close();
    await source.stop();
    const good = readFileSync(file);
    const work = join(dir, 'work');
    mkdirSync(work);
    let n = 0;
    const refused = async (bytes: Buffer, codes: string[], skipHashCheck = false) => {
      const f = join(dir, `bad-${n}.db`);
      const dataDir = join(work, `d-${n++}`);
      writeFileSync(f, bytes);
      const err = await restoreSnapshot({ file: f, dataDir, skipHashCheck, ...SINGLE }).catch(
        (e: unknown) => e,
      );
      t.ok(
        codes.some((code) => isEtceteraError(err, code as never)),
        `refused: ${String(err)}`,
      );
      t.same(readdirSync(work), [], 'nothing created');
    };
    // Cut anywhere.
    await fc.assert(
      fc.asyncProperty(fc.nat(good.length - 1), (cut) =>
        refused(good.subarray(0, cut), ['ERR_BOLT_TRUNCATED', 'ERR_BOLT_CORRUPT']),
      ),
      { numRuns: 25 },
    );
    // Any bytes flipped: the SHA-256 trailer no longer matches.
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(good.length - 1), fc.integer({ min: 1, max: 255 })), {
          minLength: 1,
          maxLength: 4,
        }),
        async (flips) => {
          const bytes = Buffer.from(good);
          for (const [at, x] of flips) bytes[at] = (bytes[at] as number) ^ x;
          await refused(bytes, ['ERR_BOLT_CORRUPT']);
        },
      ),
      { numRuns: 25 },
    );
    // Without the trailer, a damaged page header is still found by the page checks.
    const bare = good.subarray(0, good.length - 32);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 3, max: bare.length / 4096 - 1 }), async (page) => {
        const bytes = Buffer.from(bare);
        const flags = bytes.readUInt16LE(page * 4096 + 8);
        if (flags !== 1 && flags !== 2) return; // an overflow page: no header of its own
        bytes[page * 4096] = (bytes[page * 4096] as number) ^ 0x55;
        await refused(bytes, ['ERR_BOLT_CORRUPT'], true);
      }),
      { numRuns: 15 },
    );
    // A bbolt file without etcd's buckets.
    const { boltBytes } = await import('../../src/bbolt/writer.js');
    await refused(
      await boltBytes(() => [{ key: Buffer.from('other'), bucket: [] }]),
      ['ERR_SNAPSHOT_LAYOUT'],
      true,
    );
    // A bare database (no trailer) needs --skip-hash-check, as with etcdutl.
    await refused(bare, ['ERR_BOLT_TRUNCATED']);
    // An existing data dir is left as it is.
    const existing = join(dir, 'existing');
    mkdirSync(existing);
    writeFileSync(join(existing, 'keep'), 'mine');
    const r = await cli([
      'snapshot',
      'restore',
      file,
      `--data-dir=${existing}`,
      `--name=${SINGLE.name}`,
    ]);
    t.equal(r.code, 1);
    t.match(r.err, /restore target data dir already exists/);
    t.same(readdirSync(existing), ['keep']);
    t.notOk(existsSync(join(dir, '.existing.restoring')), 'no temporary dir left');
  },
);
