/**
 * A damaged data dir refuses to start. A real one-member `etcetera serve` child writes
 * acknowledged keys and is killed with SIGKILL; copies of its data dir are then damaged on
 * disk, one way each (garbage in the newest LevelDB .log, the .log cut short, garbage in an
 * .ldb table, CURRENT deleted), and a member is started on each copy: it must exit
 * non-zero with a message naming the damage and the data dir. The undamaged control copy
 * restarts with every acknowledged key.
 */
import { spawn } from 'node:child_process';
import { cp, open, readdir, rm, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { ERRORS } from '../../src/errors.js';
import { readMark } from '../../src/raft/storage/durable-mark.js';
import { freePorts, waitFor } from './helpers.js';
import { ProcCluster } from './procs/cluster.js';
import { compileCli } from './procs/compile.js';
import { prefixMap, put, status } from './procs/http.js';

const KEYS = 300;
const WORKERS = 8;

/** Writes KEYS keys (WORKERS in flight) through `client`; returns the acknowledged ones. */
async function writeKeys(client: string, round: number, acked: Map<string, string>) {
  const failed: string[] = [];
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      for (let i = w; i < KEYS; i += WORKERS) {
        const key = `k/${round}/${String(i).padStart(4, '0')}`;
        const value = `${round}:${i}:${Math.random().toString(36).repeat(4)}`;
        const a = await put(client, key, value);
        if (a.status === 200) acked.set(key, value);
        else failed.push(`${key}: ${a.status}`);
      }
    }),
  );
  return failed;
}

/** The mark is written after the data it covers (asynchronously): wait until it covers all. */
async function waitForMark(client: string, dataDir: string): Promise<void> {
  const applied = (await status(client))!.raftAppliedIndex;
  await waitFor(
    'the durable mark to cover every acknowledged write',
    async () => ((await readMark(join(dataDir, 'raft-mark')))?.index ?? 0) >= applied,
    20_000,
  );
}

interface Served {
  client: string;
  exited: Promise<{ code: number | null; stderr: string }>;
  kill: () => void;
}

/** `etcetera serve` on an existing data dir (a restart: no cluster flags). */
async function serve(cli: string, dataDir: string): Promise<Served> {
  const [client, peer] = await freePorts(2);
  const args = [cli, 'serve', '--name', 'm', '--data-dir', dataDir];
  args.push('--listen-client-urls', `http://127.0.0.1:${client}`);
  args.push('--listen-peer-urls', `http://127.0.0.1:${peer}`);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => {
    stderr += b.toString('utf8');
  });
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stderr })),
  );
  return { client: `http://127.0.0.1:${client}`, exited, kill: () => child.kill('SIGKILL') };
}

async function newest(dir: string, ext: string): Promise<string> {
  const names = (await readdir(dir)).filter((n) => n.endsWith(ext)).sort();
  const last = names[names.length - 1];
  if (last === undefined) throw new Error(`no ${ext} file in the database`);
  return join(dir, last);
}

async function scribble(file: string, at: number, length: number): Promise<void> {
  const fh = await open(file, 'r+');
  try {
    await fh.write(Buffer.alloc(length, 0x5a), 0, length, at);
  } finally {
    await fh.close();
  }
}

t.test('a damaged data dir refuses to start', async (t) => {
  const root = t.testdir();
  const cli = await compileCli();
  const c = await ProcCluster.start(cli, root, ['m']);
  t.teardown(async () => {
    if (!t.passing()) t.comment(c.logs());
    await c.close();
  });
  const m = c.get('m');
  const acked = new Map<string, string>();
  t.same(await writeKeys(m.client, 0, acked), [], 'round 0: every put acknowledged');
  await waitForMark(m.client, m.dataDir);
  await c.kill9('m');
  // All of round 0 is in LevelDB's newest .log now: copies for the log and CURRENT cases.
  const copies = ['control', 'log-garbage', 'log-cut', 'no-current', 'torn'];
  for (const name of copies) await cp(m.dataDir, join(root, name), { recursive: true });
  const round0 = new Map(acked);
  // A restart turns LevelDB's log into a table; round 1 goes to a new log.
  c.spawn('m');
  await c.waitUp('m');
  t.same(await writeKeys(m.client, 1, acked), [], 'round 1: every put acknowledged');
  await waitForMark(m.client, m.dataDir);
  await c.kill9('m');

  /** Starts a member on `dataDir`; it must exit non-zero (one that serves instead is killed). */
  const refused = async (t: Test, dataDir: string) => {
    const s = await serve(cli, dataDir);
    let done = false;
    const answered = (async () => {
      while (!done) {
        if ((await status(s.client, 500)) !== undefined) return 'served' as const;
        await new Promise((r) => setTimeout(r, 200));
      }
      return 'exited' as const;
    })();
    const first = await Promise.race([s.exited.then(() => 'exited' as const), answered]);
    if (first === 'served') s.kill();
    const { code, stderr } = await s.exited;
    done = true;
    t.equal(first, 'exited', 'refuses to serve');
    t.not(code, 0, 'exits non-zero');
    t.match(stderr, dataDir, 'names the data dir');
    return stderr;
  };

  t.test('control: the undamaged copy restarts with every key', async (t) => {
    const s = await serve(cli, join(root, 'control'));
    t.teardown(s.kill);
    await waitFor('the control member', async () => (await status(s.client)) !== undefined, 30_000);
    t.same(await prefixMap(s.client, 'k/'), round0, 'every acknowledged key is there');
  });

  t.test('a torn final write (a power cut mid-record) is accepted, as etcd does', async (t) => {
    const dir = join(root, 'torn');
    const log = await newest(join(dir, 'db'), '.log');
    const size = (await stat(log)).size;
    // A record never acknowledged: header written, payload's last sectors still zeros. Its
    // zeros must hold a whole 512-byte disk sector wherever the record starts, so they are
    // more than two sectors long (a shorter run holds an aligned sector only for some file
    // sizes, and then the test would depend on how long the log happened to be).
    const len = 2000;
    const left = 32768 - (size % 32768);
    const pad = Buffer.alloc(left < 7 + len ? left : 0); // a block's unused end is zeros
    const header = Buffer.alloc(7);
    header.writeUInt32LE(0x1234abcd, 0);
    header.writeUInt16LE(len, 4);
    header[6] = 1; // a full record
    const payload = Buffer.concat([Buffer.alloc(200, 0x33), Buffer.alloc(len - 200)]);
    const fh = await open(log, 'a');
    await fh.write(Buffer.concat([pad, header, payload]));
    await fh.close();
    const s = await serve(cli, dir);
    t.teardown(s.kill);
    const up = await Promise.race([
      s.exited.then((e) => e.stderr),
      waitFor(
        'the member on the torn copy',
        async () => (await status(s.client)) !== undefined,
        30_000,
      ),
    ]);
    t.equal(up, undefined, `the member starts${up === undefined ? '' : `; it said: ${up}`}`);
    t.same(await prefixMap(s.client, 'k/'), round0, 'every acknowledged key is there');
  });

  t.test('garbage in the newest .log: refused, and refused again', async (t) => {
    const dir = join(root, 'log-garbage');
    const log = await newest(join(dir, 'db'), '.log');
    const size = (await stat(log)).size;
    t.ok(size > 40_000, `the newest log holds the writes (${size} bytes)`);
    await scribble(log, Math.floor(size / 3), 200);
    const first = await refused(t, dir);
    t.match(first, ERRORS.ERR_DATA_CORRUPT.message);
    t.match(first, /skipped damaged log records.*checksum mismatch/, 'names the damage');
    // LevelDB's open dropped the damaged record; the refusal must not depend on seeing it again.
    const second = await refused(t, dir);
    t.match(second, /an earlier start found damage.*checksum mismatch/);
  });

  t.test('the newest .log cut short: the lost tail is found by the durable mark', async (t) => {
    const dir = join(root, 'log-cut');
    const log = await newest(join(dir, 'db'), '.log');
    await truncate(log, Math.floor((await stat(log)).size / 2));
    const out = await refused(t, dir);
    t.match(out, ERRORS.ERR_DATA_CORRUPT.message);
    t.match(out, /raft log: the log ends at entry \d+: entries \d+\.\.\d+ are lost/);
  });

  t.test('garbage in an .ldb table: refused before LevelDB opens it', async (t) => {
    const table = await newest(join(m.dataDir, 'db'), '.ldb');
    const size = (await stat(table)).size;
    t.ok(size > 20_000, `a table holds round 0 (${size} bytes)`);
    await scribble(table, Math.floor(size / 3), 64);
    const out = await refused(t, m.dataDir);
    t.match(out, ERRORS.ERR_DATA_CORRUPT.message);
    t.match(out, /table \d+\.ldb: data block at offset \d+ fails its checksum/);
  });

  t.test('CURRENT deleted: refused, and no empty database is created', async (t) => {
    const db = join(root, 'no-current', 'db');
    const before = (await readdir(db)).sort();
    await rm(join(db, 'CURRENT'));
    const out = await refused(t, join(root, 'no-current'));
    t.match(out, ERRORS.ERR_DATA_DIR_INCOMPLETE.message);
    t.match(out, /CURRENT file is missing/, 'names the damage');
    t.notMatch(out, /log segment at/, 'not the misleading Raft message');
    const after = (await readdir(db)).sort();
    t.same(
      after,
      before.filter((n) => n !== 'CURRENT'),
      'LevelDB created nothing',
    );
  });
});
