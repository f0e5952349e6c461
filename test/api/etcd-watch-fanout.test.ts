/**
 * Writes are never starved by fan-out, end to end: one member in a child process, 2,000
 * watchers each on its own HTTP connection (POST /v3/watch, one prefix), and a writer putting
 * at a steady rate. Every put must be acknowledged within the client's normal timeout (5 s,
 * etcdctl's --command-timeout), and every watcher must then get every event exactly once and
 * in order.
 *
 * What used to happen: every connection wrote in its own setImmediate, all 2,000 of them in
 * one event-loop turn per event, a socket write each; the member spent its time there and a
 * put's own steps (each a callback in the same queue) waited behind whole fan-outs, so most
 * puts timed out. Now fan-out runs in time slices with the member's I/O served between them
 * (src/watchcache/cacher.ts), and a connection that waits carries several events per write.
 *
 * Sizing: 2,000 connections is the size at which the starvation showed; the writer's rate
 * (25 puts/s for 4 s, 100 puts, 200,000 deliveries) is what a 2-core machine shared with other
 * work delivers to all watchers within the test's time, and it still starved the old fan-out
 * (there, puts timed out from the fifth on).
 * The watchers live in two child processes (1,000 connections each) that only count: each
 * keeps, per watcher, the number of events, whether revisions only grew, and a hash of the
 * revision sequence, which the test compares with the acknowledged puts' revisions.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { freePorts, waitFor } from '../server/helpers.js';
import { compileCli } from '../server/procs/compile.js';

const WATCHERS = 2_000;
const PROCESSES = 2;
const PUTS = 100;
const PUTS_PER_SECOND = 25;
const CLIENT_TIMEOUT_MS = 5_000;

/** One watcher process: `n` connections, each one watch on the prefix; reports on request. */
const WATCHER_SCRIPT = `
import http from 'node:http';
import readline from 'node:readline';
const [port, n] = [Number(process.argv[1]), Number(process.argv[2])];
const body = JSON.stringify({ create_request: { key: Buffer.from('load/').toString('base64'),
  range_end: Buffer.from('load0').toString('base64') } });
const ws = [];
// At most 100 connections being set up at once: 1,000 connects at the same instant overflow
// the listen backlog, and dropped SYNs come back only after the kernel's retry delays.
let opening = 0;
let next = 0;
const more = () => {
  while (opening < 100 && next < n) {
    opening++;
    open(next++);
  }
};
const opened = (w) => {
  if (w.settled) return;
  w.settled = true;
  opening--;
  more();
};
function open(i) {
  const w = { created: false, count: 0, last: 0, ordered: true, hash: 0, error: '' };
  ws[i] = w;
  const req = http.request({ host: '127.0.0.1', port, path: '/v3/watch', method: 'POST',
    agent: false });
  req.on('response', (res) => {
    let buf = '';
    res.setEncoding('utf8');
    res.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.includes('"created":true')) { w.created = true; opened(w); continue; }
        // Each put is one event: its mod_revision is the revision.
        let at = 0;
        for (;;) {
          at = line.indexOf('"mod_revision":"', at);
          if (at < 0) break;
          at += 16;
          const rev = Number(line.slice(at, line.indexOf('"', at)));
          if (rev <= w.last) w.ordered = false;
          w.last = rev;
          w.count++;
          w.hash = (Math.imul(w.hash, 31) + rev) >>> 0;
        }
      }
    });
    res.on('end', () => { w.error ||= 'stream ended'; opened(w); });
  });
  req.on('error', (e) => { w.error ||= e.message; opened(w); });
  req.end(body);
}
more();
readline.createInterface({ input: process.stdin }).on('line', () => {
  const out = [];
  for (let i = 0; i < n; i++) {
    const w = ws[i];
    out.push(w ? { created: w.created, count: w.count, last: w.last, ordered: w.ordered,
      hash: w.hash, error: w.error } : { created: false, count: 0, last: 0, ordered: true,
      hash: 0, error: '' });
  }
  process.stdout.write(JSON.stringify(out) + '\\n');
});
`;

interface WatcherState {
  created: boolean;
  count: number;
  last: number;
  ordered: boolean;
  hash: number;
  error: string;
}

function startWatchers(port: string, n: number) {
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', WATCHER_SCRIPT, port, String(n)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let buf = '';
  const waiting: ((s: WatcherState[]) => void)[] = [];
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => {
    buf += d;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      waiting.shift()?.(JSON.parse(line));
      nl = buf.indexOf('\n');
    }
  });
  const report = () =>
    new Promise<WatcherState[]>((resolve) => {
      waiting.push(resolve);
      child.stdin!.write('report\n');
    });
  return { child, report };
}

async function all(procs: { report: () => Promise<WatcherState[]> }[]): Promise<WatcherState[]> {
  return (await Promise.all(procs.map((p) => p.report()))).flat();
}

async function until(what: string, ms: number, cond: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

t.test(
  '2,000 watchers on their own connections: every put acknowledged, every event delivered',
  async (t) => {
    const root = await mkdtemp(join(tmpdir(), 'etcetera-fanout-'));
    const cli = await compileCli();
    const [clientPort, peerPort] = await freePorts(2);
    const url = `http://127.0.0.1:${clientPort}`;
    const member = spawn(
      process.execPath,
      [
        cli,
        'serve',
        '--data-dir',
        join(root, 'm1'),
        '--listen-client-urls',
        url,
        '--listen-peer-urls',
        `http://127.0.0.1:${peerPort}`,
        '--log-level',
        'error',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const children: ChildProcess[] = [member];
    t.teardown(async () => {
      for (const c of children) c.kill('SIGKILL');
      await rm(root, { recursive: true, force: true });
    });
    // A busy machine can take a while to start a process; the member's start is not under test.
    await waitFor(
      'the member to answer',
      async () => (await fetch(`${url}/health`).catch(() => undefined))?.status === 200,
      90_000,
      100,
    );
    const port = String(clientPort);
    const procs = Array.from({ length: PROCESSES }, () =>
      startWatchers(port, WATCHERS / PROCESSES),
    );
    for (const p of procs) children.push(p.child);
    await until('every watch to be created', 120_000, async () =>
      (await all(procs)).every((w) => w.created),
    );

    // The writer: one put every 1/25 s, each with the client's normal timeout.
    const acked: number[] = [];
    const failed: string[] = [];
    const puts: Promise<void>[] = [];
    const start = Date.now();
    for (let i = 0; i < PUTS; i++) {
      const due = start + (i * 1000) / PUTS_PER_SECOND;
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
      const body = JSON.stringify({
        key: Buffer.from(`load/${i % 10}`).toString('base64'),
        value: Buffer.from(`v${i}`).toString('base64'),
      });
      puts.push(
        fetch(`${url}/v3/kv/put`, {
          method: 'POST',
          body,
          signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
        })
          .then(async (r) => {
            const j = (await r.json()) as { header?: { revision?: string } };
            if (r.status !== 200 || j.header?.revision === undefined)
              failed.push(`put ${i}: HTTP ${r.status}`);
            else acked.push(Number(j.header.revision));
          })
          .catch((e: Error) => void failed.push(`put ${i}: ${e.name} ${e.message}`)),
      );
    }
    await Promise.all(puts);
    t.equal(failed.length, 0, `all ${PUTS} puts acknowledged within ${CLIENT_TIMEOUT_MS} ms`);
    if (failed.length > 0)
      t.comment(`${failed.length} failed, first: ${failed.slice(0, 3).join('; ')}`);
    t.equal(acked.length, PUTS);

    acked.sort((a, b) => a - b);
    let hash = 0;
    for (const rev of acked) hash = (Math.imul(hash, 31) + rev) >>> 0;
    let states: WatcherState[] = [];
    await until('every watcher to get every event', 120_000, async () => {
      states = await all(procs);
      return states.every((w) => w.count >= acked.length || w.error !== '');
    }).catch((e: Error) => t.fail(e.message));
    const wrong = states.filter(
      (w) => w.error !== '' || !w.ordered || w.count !== acked.length || w.hash !== hash,
    );
    t.equal(states.length, WATCHERS);
    t.equal(wrong.length, 0, 'every watcher got every event exactly once, in order');
    if (wrong.length > 0) t.comment(`first wrong watcher: ${JSON.stringify(wrong[0])}`);
  },
);
