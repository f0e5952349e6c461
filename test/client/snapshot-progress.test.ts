/**
 * `etcetera snapshot save`'s progress (src/cli/progress.ts): the line's figures, redraws at
 * most every 100 ms on a terminal and nothing elsewhere; then the command itself against a
 * member in this process: without a terminal stdout and stderr are exactly etcdctl's (the
 * saved line, nothing else), with one stderr carries the progress ending in a full bar, and
 * either way the saved file's checksum was verified (snapshot status reads it).
 */
import { join } from 'node:path';
import t from 'tap';
import { runClientCommand } from '../../src/cli/client.js';
import { formatBytes, Progress, progressLine } from '../../src/cli/progress.js';
import { snapshotStatus } from '../../src/client/snapshot-status.js';
import { startMember } from '../api/servers.js';
import { runCli } from './run-cli.js';

t.test('the line and its redraws', async (t) => {
  t.equal(formatBytes(512), '512 B');
  t.equal(formatBytes(1536), '1.5 KiB');
  t.equal(formatBytes(3 * 1024 * 1024), '3.0 MiB');
  t.equal(
    progressLine(2 * 1024 * 1024, 2000, 0, true),
    '[====================] 2.0 MiB received, 1.0 MiB/s, 2.0 s',
  );
  const moving = [0, 1, 2].map((i) => progressLine(10, 1000, i).slice(0, 22));
  t.equal(new Set(moving).size, 3, 'the bar moves with each redraw');
  t.ok(
    moving.every((b) => b.length === 22),
    'and keeps its width',
  );

  let now = 0;
  const drawn: string[] = [];
  const p = new Progress({ write: (s) => drawn.push(s), tty: true, now: () => now });
  for (let i = 1; i <= 10; i++) {
    now = i * 30;
    p.update(i * 1000);
  }
  p.finish(true);
  t.equal(drawn.length, 4, 'over 300 ms: three redraws (at most one per 100 ms) and the end');
  t.ok(
    drawn.every((d) => d.startsWith('\r')),
    'each redraw returns to the start of the line',
  );
  t.match(drawn.at(-1), /\[=+\] 9\.8 KiB received, 32\.6 KiB\/s, 0\.3 s/);
  t.ok(drawn.at(-1)?.endsWith('\x1b[K\n'), 'the end clears the rest of the line and ends it');

  const silent: string[] = [];
  const q = new Progress({ write: (s) => silent.push(s), tty: false });
  q.update(100);
  q.finish(true);
  t.same(silent, [], 'not a terminal: nothing drawn');
});

t.test('snapshot save with and without a terminal', async (t) => {
  const dir = t.testdir();
  const m = await startMember(join(dir, 'member'));
  t.teardown(() => m.close());
  for (let i = 0; i < 50; i++)
    await m.member.write({
      op: 'put',
      key: new Uint8Array(Buffer.from(`k${i}`)),
      value: new Uint8Array(Buffer.alloc(2000, 'v')),
      lease: 0,
    } as Parameters<typeof m.member.write>[0]);

  const plain = join(dir, 'plain.db');
  t.same(await runCli(['snapshot', 'save', plain, '--endpoints', m.url]), {
    code: 0,
    out: `Snapshot saved at ${plain}\n`,
    err: '',
  });
  t.ok((await snapshotStatus(plain)).totalKey >= 50, 'the file is a whole snapshot');

  const shown = join(dir, 'tty.db');
  let out = '';
  let err = '';
  const code = await runClientCommand(['snapshot', 'save', shown, '--endpoints', m.url], {
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      err += s;
    },
    readStdin: async () => '',
    stderrIsTTY: true,
  });
  t.equal(code, 0);
  t.equal(out, `Snapshot saved at ${shown}\n`, 'stdout as without a terminal');
  t.match(err, /^\r\[/, 'the progress drawn on stderr');
  t.match(err, /\[=+\] [\d.]+ KiB received, [\d.]+ [KMG]?i?B\/s, [\d.]+ s/, 'ending in a full bar');
  t.ok(err.endsWith('\x1b[K\n'), 'and the line ended');
  t.ok((await snapshotStatus(shown)).totalKey >= 50);
});
