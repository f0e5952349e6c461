/**
 * Crash test: a child process writes with fsync and acknowledges each write on a pipe; we
 * kill it with SIGKILL at random moments, reopen the store, and check that every
 * acknowledged write is there and that the rebuilt key index agrees with the data.
 */
import { spawn } from 'node:child_process';
import t from 'tap';
import type { Revision } from '../../src/store/index.js';
import { open } from '../../src/store/index.js';
import { siblingModule } from '../paths.js';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 4);
const child = siblingModule(import.meta.url, './fixtures/crash-writer');

interface RoundResult {
  acks: Array<[number, number]>;
}

function runAndKill(dir: string, killAfterMs: number): Promise<RoundResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...process.execArgv, child, dir, '8'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const acks: Array<[number, number]> = [];
    let buffered = '';
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    p.stdout.setEncoding('utf8');
    p.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (line === 'ready' && !timer) timer = setTimeout(() => p.kill('SIGKILL'), killAfterMs);
        const m = /^ack (\d+) (\d+)$/.exec(line);
        if (m) acks.push([Number(m[1]), Number(m[2])]);
      }
    });
    p.stderr.on('data', (d) => {
      stderr += d;
    });
    p.on('error', reject);
    p.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child exited with ${code}/${signal}: ${stderr}`));
      else resolve({ acks });
    });
  });
}

t.test(
  `SIGKILL during fsynced writes, ${ROUNDS} rounds: no acknowledged write is lost`,
  async (t) => {
    const dir = t.testdir();
    const acked = new Set<string>();
    let totalAcks = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const killAfter = 30 + Math.floor(Math.random() * 400);
      const { acks } = await runAndKill(dir, killAfter);
      totalAcks += acks.length;
      for (const [w, n] of acks) acked.add(`${w}:${n}`);

      const store = await open({ dir, leaseCheckIntervalMs: 0 });
      try {
        // Every write ever made, from the full history (nothing is compacted here).
        const written = new Set<string>();
        const versions = new Map<string, { count: number; lastRev: number }>();
        let expectRev = 2;
        let contiguous = true;
        for await (const batch of store.history(1 as Revision, {
          key: Buffer.from([0]),
          rangeEnd: Buffer.from([0]),
        })) {
          if (batch.revision !== expectRev) contiguous = false;
          expectRev = batch.revision + 1;
          for (const e of batch.events) {
            const key = Buffer.from(e.kv.key).toString();
            const v = versions.get(key) ?? { count: 0, lastRev: 0 };
            versions.set(key, { count: v.count + 1, lastRev: batch.revision });
            const m = /^w(\d+)\/k\d+$/.exec(key);
            if (m) written.add(`${m[1]}:${Buffer.from(e.kv.value).toString().split(':')[0]}`);
            if (/^w\d+\/t$/.test(key))
              written.add(
                `${key.slice(1, key.indexOf('/'))}:${Buffer.from(e.kv.value).toString()}`,
              );
          }
        }
        t.ok(contiguous, `round ${round}: revisions are contiguous`);
        t.equal(
          expectRev - 1,
          store.currentRevision,
          `round ${round}: history ends at the current revision`,
        );
        const missing = [...acked].filter((a) => !written.has(a));
        t.same(missing, [], `round ${round}: all ${acked.size} acknowledged writes are present`);
        // The key index rebuilt on open agrees with the data on disk.
        const all = await store.range({ key: Buffer.from([0]), rangeEnd: Buffer.from([0]) });
        t.equal(store.keyCount, all.count, `round ${round}: index size equals stored keys`);
        let agree = true;
        for (const kv of all.kvs) {
          const v = versions.get(Buffer.from(kv.key).toString());
          if (!v || v.count !== kv.version || v.lastRev !== kv.modRevision) agree = false;
        }
        t.ok(agree, `round ${round}: every key's version and mod revision match its history`);
        // Each command is one put or one txn: one revision each, applied index in step.
        t.equal(
          store.appliedIndex,
          store.currentRevision - 1,
          `round ${round}: applied index matches`,
        );
      } finally {
        await store.close();
      }
    }
    t.ok(totalAcks > ROUNDS, `the children acknowledged ${totalAcks} writes in all`);
  },
);
