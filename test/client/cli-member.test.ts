/**
 * The maintenance commands of the client CLI over gRPC against a real etcetera member:
 * snapshot save keeps a file whose trailer is the SHA-256 of the rest, endpoint hashkv
 * follows the keyspace, defrag and alarm list answer as etcdctl's.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startMember } from '../api/servers.js';
import { runCli } from './run-cli.js';

t.test('snapshot save, endpoint hashkv, defrag, alarm list over gRPC', async (t) => {
  const dir = t.testdir();
  const member = await startMember(join(dir, 'member'));
  t.teardown(() => member.close());
  const run = (args: string[]) => runCli([...args, `--endpoints=${member.url}`]);

  for (let i = 0; i < 20; i++) await run(['put', `k${i}`, 'v'.repeat(200)]);
  const file = join(dir, 'snap.db');
  t.same(await run(['snapshot', 'save', file]), {
    code: 0,
    out: `Snapshot saved at ${file}\n`,
    err: '',
  });
  const saved = readFileSync(file);
  t.ok(saved.length > 4000, `${saved.length} bytes`);
  t.equal(
    createHash('sha256')
      .update(saved.subarray(0, saved.length - 32))
      .digest('hex'),
    saved.subarray(saved.length - 32).toString('hex'),
    'the saved file ends with the SHA-256 of the rest',
  );
  const h1 = await run(['endpoint', 'hashkv']);
  t.match(h1, { code: 0, out: new RegExp(`^${member.url}, \\d+\\n$`) });
  t.same(await run(['endpoint', 'hashkv']), h1, 'the same keyspace, the same hash');
  await run(['put', 'k0', 'changed']);
  t.not((await run(['endpoint', 'hashkv'])).out, h1.out, 'a new version changes it');
  t.match(await run(['defrag']), {
    code: 0,
    out: new RegExp(
      `^Finished defragmenting etcd member\\[${member.url}\\]\\ndb size of member\\[${member.url}\\]: \\d+ -> \\d+ bytes\\n$`,
    ),
    err: '',
  });
  t.same(await run(['alarm', 'list']), { code: 0, out: '', err: '' });
});
