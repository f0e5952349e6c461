/**
 * The maintenance commands of the client CLI against the real etcd, side by side with the
 * real etcdctl: the same stdout and exit code for defrag, alarm list|disarm, endpoint
 * hashkv, move-leader's refusals, and snapshot save (the same bytes; etcdctl reads our file).
 * Skipped, with the reason printed, where etcd or etcdctl is not installed.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { Client } from '../../src/client/index.js';
import { snapshotStatus } from '../../src/client/snapshot-status.js';
import { isEtceteraError } from '../../src/errors.js';
import { etcdUnavailable, startEtcd } from '../api/servers.js';
import { runCli } from './run-cli.js';

function etcdctlUnavailable(): string | undefined {
  const r = spawnSync('etcdctl', ['version'], { encoding: 'utf8', env: etcdctlEnv() });
  if (r.error) return `etcdctl is not installed (${(r.error as NodeJS.ErrnoException).code})`;
  return undefined;
}

function etcdctlEnv(): NodeJS.ProcessEnv {
  return { ...process.env, ETCDCTL_API: '3' };
}

const skip = etcdUnavailable() ?? etcdctlUnavailable() ?? false;

interface Run {
  code: number;
  out: string;
  err: string;
}

async function setup(t: Test) {
  const dir = t.testdir();
  const etcd = await startEtcd(join(dir, 'etcd'));
  t.teardown(() => etcd.close());
  const endpoint = etcd.url.replace('http://', '');
  const ours = (args: string[]): Promise<Run> => runCli([...args, `--endpoints=${endpoint}`]);

  const theirs = (args: string[]): Run => {
    const r = spawnSync('etcdctl', [...args, `--endpoints=${endpoint}`], {
      encoding: 'utf8',
      env: etcdctlEnv(),
    });
    // etcdctl logs JSON lines to stderr beside its message; keep the message.
    const err = r.stderr
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('{"level"'))
      .map((l) => `${l}\n`)
      .join('');
    return { code: r.status ?? -1, out: r.stdout, err };
  };
  const same = async (t: Test, args: string[]) => {
    const want = theirs(args);
    const got = await ours(args);
    t.same(got, want, `etcetera ${args.join(' ')} prints what etcdctl prints`);
    return got;
  };
  return { dir, etcd, ours, theirs, same };
}

t.test('defrag, endpoint hashkv, alarm list and disarm as etcdctl', { skip }, async (t) => {
  const { etcd, same, ours, theirs } = await setup(t);
  const client = new Client({ endpoints: [etcd.url] });
  t.teardown(() => client.close());
  await client.put('a', '1');
  await client.put('b', '2');
  // etcetera adds one line after etcdctl's: the member's db size before and after.
  const want = theirs(['defrag']);
  const got = await ours(['defrag']);
  const [first, sizes, ...rest] = got.out.split('\n');
  t.same({ ...got, out: `${first}\n` }, want, 'etcetera defrag prints what etcdctl prints first');
  t.match(sizes, /^db size of member\[.*\]: \d+ -> \d+ bytes$/, 'then the sizes');
  t.same(rest, [''], 'and nothing else');
  for (const w of ['simple', 'table', 'json']) await same(t, ['endpoint', 'hashkv', '-w', w]);
  await same(t, ['endpoint', 'hashkv', '--rev', '2']);
  await same(t, ['alarm', 'list']);
  // Raise an alarm on the member (etcd raises NOSPACE itself when its quota is full).
  const { header } = await client.status();
  const raise = () =>
    client.wire.unary('Maintenance.Alarm', {
      action: 'ACTIVATE',
      memberID: header.memberId,
      alarm: 'NOSPACE',
    });
  await raise();
  const listed = await same(t, ['alarm', 'list']);
  t.equal(listed.out, `memberID:${header.memberId} alarm:NOSPACE \n`);
  await same(t, ['alarm', 'list', '-w', 'json']);
  await same(t, ['alarm', 'list', '-w', 'table']);
  // Disarm clears what it prints: each tool gets an alarm of its own to clear.
  const disarmed = await ours(['alarm', 'disarm']);
  await raise();
  t.same(disarmed, theirs(['alarm', 'disarm']), 'alarm disarm prints what etcdctl prints');
  t.equal(disarmed.out, listed.out, 'disarm prints what it cleared');
  await same(t, ['alarm', 'list']);
  t.same((await client.alarmList()).alarms, [], 'the alarm is gone');
});

t.test('move-leader: refusals as etcdctl', { skip }, async (t) => {
  const { same } = await setup(t);
  await same(t, ['move-leader', '1234']);
  await same(t, ['move-leader', 'zz']);
  await same(t, ['move-leader']);
});

t.test(
  'snapshot save: the same file as etcdctl saves, and etcdctl reads it',
  { skip },
  async (t) => {
    const { dir, etcd, ours, theirs } = await setup(t);
    const client = new Client({ endpoints: [etcd.url] });
    t.teardown(() => client.close());
    for (let i = 0; i < 20; i++) await client.put(`k${i}`, 'v'.repeat(500));
    // Enough keys for the key bucket to need branch pages.
    for (let i = 0; i < 300; i++) await client.put(`small/${i}`, `${i}`);
    const mine = join(dir, 'ours.db');
    const reference = join(dir, 'etcdctl.db');
    t.same(await ours(['snapshot', 'save', mine]), {
      code: 0,
      out: `Snapshot saved at ${mine}\n`,
      err: '',
    });
    t.equal(theirs(['snapshot', 'save', reference]).code, 0);
    t.ok(readFileSync(mine).equals(readFileSync(reference)), 'byte for byte');
    const status = theirs(['snapshot', 'status', mine, '-w', 'json']);
    t.equal(status.code, 0, status.err);
    t.match(JSON.parse(status.out), { revision: 321 });
    for (const w of ['simple', 'table', 'json']) {
      const args = ['snapshot', 'status', mine, '-w', w];
      t.same(await ours(args), theirs(args), `snapshot status -w ${w} prints what etcdctl prints`);
    }
    const notDb = join(dir, 'not-a-db');
    writeFileSync(notDb, 'x'.repeat(10_000));
    t.match(await ours(['snapshot', 'status', notDb]), {
      code: 1,
      out: '',
      err: /invalid database/,
    });
    t.equal(theirs(['snapshot', 'status', notDb]).code, 1, 'etcdctl refuses it too');
    // Damaged databases: a clear error or a status, never a crash or another kind of error.
    const good = readFileSync(mine);
    const damaged = join(dir, 'damaged.db');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(good.length - 1), fc.integer({ min: 1, max: 255 })), {
          minLength: 1,
          maxLength: 8,
        }),
        async (flips) => {
          const bytes = Buffer.from(good);
          for (const [at, x] of flips) bytes[at] = (bytes[at] as number) ^ x;
          writeFileSync(damaged, bytes);
          const r = await snapshotStatus(damaged).catch((e: unknown) => e);
          return (
            !(r instanceof Error) ||
            isEtceteraError(r, 'ERR_BOLT_CORRUPT') ||
            isEtceteraError(r, 'ERR_BOLT_TRUNCATED')
          );
        },
      ),
      { numRuns: 300 },
    );
    const two = await runCli([
      'snapshot',
      'save',
      join(dir, 'x.db'),
      `--endpoints=${etcd.url},${etcd.url}`,
    ]);
    t.equal(two.code, 5, 'one endpoint only, as etcdctl');
  },
);
