/**
 * Defragment on a member with real LevelDB files: during a bounded write load over HTTP it
 * loses no acknowledged write, and after deletes and compaction it gives the space back
 * (the database files are smaller after than before, as the log and the CLI report).
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { runClientCommand } from '../../src/cli/client.js';
import { capturingLogger, startSingle, waitFor } from './helpers.js';

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

t.test('defragment during a write load loses nothing and reclaims space', async (t) => {
  const { logger, lines } = capturingLogger('m1');
  const m = await startSingle(t.testdir(), { snapshotCount: 50 }, { logger });
  t.teardown(() => m.stop());
  await waitFor('leader', () => m.health().health);
  const url = m.clientUrls[0]!.href.replace(/\/$/, '');
  const put = async (key: string, value: string | Buffer) =>
    fetch(`${url}/v3/kv/put`, {
      method: 'POST',
      body: JSON.stringify({ key: b64(key), value: b64(value) }),
    }).then((r) => r.status);

  // Garbage to reclaim: versions overwritten, then keys deleted, then compacted away.
  for (let round = 0; round < 3; round++)
    for (let i = 0; i < 60; i++) await put(`junk/${i}`, randomBytes(8 * 1024));
  const del = await m.write({
    op: 'deleteRange',
    key: Buffer.from('junk/'),
    rangeEnd: Buffer.from('junk0'),
  });
  await m.write({ op: 'compact', revision: del.result.result.revision });
  await m.store.compactionIdle();

  const acked = new Map<string, string>();
  let stop = false;
  const workers = Array.from({ length: 4 }, async (_, w) => {
    for (let i = 0; i < 150 && !stop; i++) {
      const key = `load/${w}/${i}`;
      const value = `${w}:${i}:${randomBytes(64).toString('hex')}`;
      if ((await put(key, value)) === 200) acked.set(key, value);
    }
  });
  await waitFor('the load to start', () => acked.size >= 20);
  const first = await m.maintenance.defragment();
  await m.maintenance.defragment(); // a second one, still under load
  stop = true;
  await Promise.all(workers);

  t.ok(
    first.dbSizeAfter < first.dbSizeBefore,
    `defragment: ${first.dbSizeBefore} -> ${first.dbSizeAfter} bytes`,
  );
  t.ok(acked.size >= 20, `${acked.size} writes acknowledged during the load`);
  const missing: string[] = [];
  for (const [key, value] of acked) {
    const r = await m.range({ key: Buffer.from(key) });
    const got =
      r.result.kvs[0] === undefined ? undefined : Buffer.from(r.result.kvs[0].value).toString();
    if (got !== value) missing.push(key);
  }
  t.same(missing, [], 'every acknowledged write is there after defragmenting');
  const logged = lines.find((l) => l.msg === 'finished defragmenting');
  t.match(
    logged,
    { dbSizeBefore: first.dbSizeBefore, dbSizeAfter: first.dbSizeAfter },
    'logged with its sizes',
  );

  let out = '';
  const code = await runClientCommand(['defrag', `--endpoints=${url}`], {
    stdout: (s) => {
      out += s;
    },
    stderr: () => undefined,
    readStdin: async () => '',
  });
  t.equal(code, 0);
  t.match(
    out,
    new RegExp(
      `^Finished defragmenting etcd member\\[${url}\\]\\ndb size of member\\[${url}\\]: \\d+ -> \\d+ bytes\\n$`,
    ),
  );
});
