/**
 * A member's snapshot in etcd's own format, against etcd's own tools: `etcdctl snapshot save`
 * from an etcetera member gives a file that `etcdctl snapshot status` reads (same revision,
 * same total keys as etcetera's reader counts; `etcetera snapshot status` prints what etcdctl
 * prints), and `etcdctl snapshot restore` turns into a
 * data dir from which the real etcd serves the same keys at the same revisions (with a
 * compaction, deletions, a large value and leases in the history). Skipped, with the reason
 * printed, where etcd or etcdctl is not installed.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { BoltReader, dumpBolt } from '../../src/bbolt/reader.js';
import { Client } from '../../src/client/index.js';
import { etcdUnavailable, freePort, startEtcd } from '../api/servers.js';
import { runCli } from '../client/run-cli.js';
import { startSingle } from './helpers.js';
import { etcdctlUnavailable, type History, historyOf, writeHistory } from './snapshot-history.js';

function ctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'etcdctl',
      ['--command-timeout=30s', ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 120_000, maxBuffer: 1 << 26 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const cli = (args: string[]) => runCli(args);

const skip = etcdUnavailable() ?? etcdctlUnavailable() ?? false;

t.test(
  'etcetera snapshot → etcdctl status and restore → etcd serves the same',
  { skip },
  async (t) => {
    const dir = t.testdir();
    const m = await startSingle(join(dir, 'member'));
    t.teardown(() => m.stop());
    const ep = m.clientUrls[0]!.host;
    const ours = new Client({ endpoints: [`http://${ep}`] });
    t.teardown(() => ours.close());
    const written = await writeHistory(ours);
    const before: History = await historyOf(ours, written.compacted);

    const file = join(dir, 'snap.db');
    const save = await ctl([`--endpoints=${ep}`, 'snapshot', 'save', file]);
    t.equal(save.code, 0, save.code === 0 ? 'etcdctl snapshot save' : save.stderr);

    const status = await ctl(['snapshot', 'status', file, '-w', 'json']);
    t.equal(status.code, 0, status.stderr);
    const st = JSON.parse(status.stdout) as {
      revision: number;
      totalKey: number;
      totalSize: number;
    };
    t.equal(st.revision, before.revision, 'etcdctl reads the revision');
    const reader = await BoltReader.open(file);
    const dump = await dumpBolt(reader);
    await reader.close();
    t.equal(
      st.totalKey,
      dump.reduce((n, b) => n + b.entries.length, 0),
      'etcdctl counts every key',
    );
    t.equal(st.totalSize, reader.size);
    for (const w of ['json', 'table']) {
      const theirs = await ctl(['snapshot', 'status', file, '-w', w]);
      const ours = await cli(['snapshot', 'status', file, '-w', w]);
      t.same(
        ours,
        { code: 0, out: theirs.stdout, err: '' },
        `etcetera snapshot status -w ${w} as etcdctl`,
      );
    }
    const keyBucket = dump.find((b) => b.name.toString() === 'key')!;
    t.ok(
      keyBucket.entries.some(([k]) => k.length === 18 && k[17] === 0x74),
      'a tombstone key',
    );

    const peer = await freePort();
    const client = await freePort();
    const dataDir = join(dir, 'etcd');
    const restore = await ctl([
      'snapshot',
      'restore',
      file,
      '--name=default',
      `--data-dir=${dataDir}`,
      `--initial-cluster=default=http://127.0.0.1:${peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
    ]);
    t.equal(restore.code, 0, restore.code === 0 ? 'etcdctl snapshot restore' : restore.stderr);
    const etcd = await startEtcd(dataDir, { client, peer });
    t.teardown(() => etcd.close());
    const theirs = new Client({ endpoints: [etcd.url] });
    t.teardown(() => theirs.close());
    const after = await historyOf(theirs, written.compacted);
    t.same(after, before, 'etcd serves the same keys at every revision from the compaction on');
    const compacted = await theirs
      .get('a', { revision: written.compacted - 1 })
      .catch((e: unknown) => String(e));
    t.match(compacted, /compacted/, 'and refuses revisions below it');
  },
);
