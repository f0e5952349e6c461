/**
 * The durable high-water mark (src/raft/storage/durable-mark.ts) and its check in
 * LevelRaftStorage: the file keeps its newest valid slot through a torn write; over random
 * Raft-legal histories (conflicting appends above the commit index, commit-only hard
 * states, snapshots and compaction, a leader's snapshot) a reopen with the mark never
 * refuses; and losing the newest log record the mark covers always refuses.
 */
import { mkdtempSync } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { Level } from 'level';
import t from 'tap';
import { isEtceteraError } from '../../../src/errors.js';
import { encodeHardState } from '../../../src/raft/storage/disk-format.js';
import { DurableMark, readMark } from '../../../src/raft/storage/durable-mark.js';
import { LevelRaftStorage } from '../../../src/raft/storage/level-storage.js';
import { type ConfState, LogIndex, NodeId, Term } from '../../../src/raft/types.js';
import { ent } from './storage-conformance.js';

const CONF: ConfState = { voters: [NodeId(1)], learners: [] };

t.test('the mark file: newest valid slot wins, a torn write falls back', async (t) => {
  const path = join(t.testdir(), 'raft-mark');
  const mark = await DurableMark.create(path);
  t.same(await readMark(path), { index: 0, term: 0, hardTerm: 0 });
  for (let i = 1; i <= 5; i++) mark.advance({ index: i * 10, term: i, hardTerm: i });
  await mark.flush();
  t.same(await readMark(path), { index: 50, term: 5, hardTerm: 5 });
  mark.advance({ index: 40, term: 4, hardTerm: 4 });
  await mark.flush();
  t.same((await readMark(path))?.index, 50, 'never moves backwards');
  const reopened = await DurableMark.open(path);
  reopened!.advance({ index: 60, term: 6, hardTerm: 6 });
  await reopened!.flush();
  t.same(await readMark(path), { index: 60, term: 6, hardTerm: 6 }, 'a reopened mark goes on');
  // Tear the newest slot (garbage over half of it): the older slot is used.
  const bytes = await readFile(path);
  const newestSlot = bytes.readUInt32BE(4) > bytes.readUInt32BE(68) ? 0 : 64;
  const fh = await open(path, 'r+');
  await fh.write(Buffer.alloc(16, 0xee), 0, 16, newestSlot + 8);
  await fh.close();
  t.ok(((await readMark(path))?.index ?? 0) < 60, 'a torn newest slot falls back to the older');
  await writeFile(path, Buffer.alloc(128, 0xee));
  await t.rejects(readMark(path), { code: 'ERR_DATA_CORRUPT' }, 'no valid slot: refused');
});

t.test('mark writes are spaced; flush writes the waiting value at once', async (t) => {
  const path = join(t.testdir(), 'raft-mark');
  // A spacing far beyond the test's run: only flush() can write the second value.
  const mark = await DurableMark.create(path, { spacingMs: 600_000 });
  mark.advance({ index: 1, term: 1, hardTerm: 1 });
  // The first write after a quiet spell goes at once.
  for (let i = 0; i < 1000 && (await readMark(path))?.index !== 1; i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  t.equal((await readMark(path))?.index, 1, 'the first value is written at once');
  for (let i = 2; i <= 5; i++) mark.advance({ index: i, term: i, hardTerm: i });
  // Time enough for several unspaced writes (open, write, fdatasync, close).
  await new Promise((r) => setTimeout(r, 300));
  t.equal((await readMark(path))?.index, 1, 'the next write waits out the spacing');
  t.same(mark.value, { index: 5, term: 5, hardTerm: 5 }, 'the newest value is kept');
  await mark.flush();
  t.same(await readMark(path), { index: 5, term: 5, hardTerm: 5 }, 'flush writes it now');
  mark.advance({ index: 6, term: 6, hardTerm: 6 });
  await mark.flush();
  t.equal((await readMark(path))?.index, 6, 'and every flush after it');
  await mark.close();
  mark.advance({ index: 7, term: 7, hardTerm: 7 });
  await mark.close();
  t.equal((await readMark(path))?.index, 7, 'close writes what waits; a closed mark opens again');
});

t.test('a storage flush writes the spaced mark', async (t) => {
  const root = t.testdir();
  const markPath = join(root, 'raft-mark');
  const mark = await DurableMark.create(markPath, { spacingMs: 600_000 });
  const db = new Level(join(root, 'db'));
  await db.open();
  t.teardown(() => db.close());
  const storage = await LevelRaftStorage.open(db, { bootstrap: CONF, mark });
  const hs = { term: Term(1), vote: NodeId(1), commit: LogIndex(0) };
  await storage.persist({ hardState: hs, entries: [ent(1, 1)], mustSync: true });
  await storage.persist({
    hardState: { ...hs, commit: LogIndex(1) },
    entries: [ent(2, 1)],
    mustSync: true,
  });
  await storage.persist({
    hardState: { ...hs, commit: LogIndex(2) },
    entries: [ent(3, 1)],
    mustSync: true,
  });
  await storage.flush();
  t.equal((await readMark(markPath))?.index, 2, 'the mark covers every committed durable entry');
});

type Op =
  | { kind: 'append'; back: number; count: number; newTerm: boolean }
  | { kind: 'commit'; by: number }
  | { kind: 'snapshot'; back: number; compactBack: number }
  | { kind: 'install'; ahead: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      back: fc.nat(4),
      count: fc.integer({ min: 1, max: 5 }),
      newTerm: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('commit' as const),
      by: fc.integer({ min: 1, max: 6 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('snapshot' as const),
      back: fc.nat(3),
      compactBack: fc.nat(3),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('install' as const),
      ahead: fc.integer({ min: 1, max: 4 }),
    }),
  },
);

t.test(
  'Raft-legal histories reopen under the mark; losing a marked entry is refused',
  async (t) => {
    const root = t.testdir();
    let refusals = 0;
    let byMark = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 30 }), async (ops) => {
        const dir = mkdtempSync(join(root, 'run-'));
        const markPath = join(dir, 'raft-mark');
        const db = new Level(join(dir, 'db'));
        await db.open();
        try {
          const mark = await DurableMark.create(markPath);
          const disk = await LevelRaftStorage.open(db, { bootstrap: CONF, mark });
          const h = { term: 1, commit: 0 };
          for (const op of ops) await step(op, disk, h);
          await disk.flush();
          await mark.flush();
          // No damage: the reopen must accept.
          const again = await DurableMark.open(markPath);
          await LevelRaftStorage.open(db, { mark: again! });
          const m = again!.loaded;
          const snapIndex = disk.snapshot().metadata.index;
          if (m.index > snapIndex) {
            // Lose the log's tail (as LevelDB drops a cut log) down to the marked entry.
            const log = db.sublevel<Uint8Array, Uint8Array>('raft-log', {
              keyEncoding: 'view',
              valueEncoding: 'view',
            });
            // From the record that holds the marked entry to the end.
            const keys = await log.keys().all();
            let from = 0;
            keys.forEach((k, i) => {
              if (Number(Buffer.from(k).readBigUInt64BE(0)) <= m.index) from = i;
            });
            await log.batch(keys.slice(from).map((key) => ({ type: 'del' as const, key })));
            // The hard state lost with that tail was an older one: commit 0, same term.
            const state = db.sublevel<string, Uint8Array>('raft-state', { valueEncoding: 'view' });
            const older = { term: Term(m.hardTerm), vote: NodeId(1), commit: LogIndex(0) };
            await state.put('hard', encodeHardState(older));
            try {
              await LevelRaftStorage.open(db, { mark: again! });
              throw new Error(`mark ${JSON.stringify(m)}: a lost tail record was accepted`);
            } catch (e) {
              if (!isEtceteraError(e, 'ERR_DATA_CORRUPT') && !isEtceteraError(e, 'ERR_CORRUPT')) {
                throw e;
              }
              refusals++;
              if (isEtceteraError(e, 'ERR_DATA_CORRUPT')) byMark++;
            }
          }
        } finally {
          await db.close();
        }
      }),
      { numRuns: 40 },
    );
    t.ok(refusals > 0, `${refusals} of 40 runs lost a marked entry and were refused`);
    t.equal(byMark, refusals, 'each by the mark (the hard state alone could not tell)');
  },
);

async function step(op: Op, disk: LevelRaftStorage, h: { term: number; commit: number }) {
  const last = disk.lastIndex();
  const snap = disk.snapshot().metadata.index;
  const hs = () => ({ term: Term(h.term), vote: NodeId(1), commit: LogIndex(h.commit) });
  if (op.kind === 'append') {
    // A conflicting append may replace entries above the commit index only.
    const start = Math.max(h.commit + 1, snap + 1, last + 1 - op.back);
    if (op.newTerm || start <= last) h.term++;
    const entries = Array.from({ length: op.count }, (_, k) => ent(start + k, h.term, 'x'));
    await disk.persist({ entries, hardState: hs(), mustSync: true });
  } else if (op.kind === 'commit') {
    h.commit = Math.min(disk.lastIndex(), h.commit + op.by);
    await disk.persist({ entries: [], hardState: hs(), mustSync: false });
  } else if (op.kind === 'snapshot') {
    const at = LogIndex(h.commit - op.back);
    if (at <= snap) return;
    await disk.createSnapshot(at, CONF, Uint8Array.of(1));
    const to = LogIndex(at - op.compactBack);
    if (to < disk.firstIndex()) return;
    await disk.compact(to);
  } else {
    // A leader's snapshot past everything this member has: its log is replaced.
    h.term++;
    const at = LogIndex(Math.max(last, h.commit) + op.ahead);
    h.commit = at;
    const s = {
      metadata: { index: at, term: Term(h.term), confState: CONF },
      data: Uint8Array.of(2),
    };
    await disk.persist({ snapshot: s, entries: [], hardState: hs(), mustSync: true });
  }
}
