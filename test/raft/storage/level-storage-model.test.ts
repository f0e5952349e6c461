/**
 * Model check of the segmented durable log: random appends (with conflicts), snapshots,
 * compactions and received snapshots go to LevelRaftStorage and to MemoryStorage; after
 * every run the database is reopened and must hold exactly the model's log above its
 * snapshot, with the same hard state.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { Level } from 'level';
import t from 'tap';
import { LevelRaftStorage } from '../../../src/raft/storage/level-storage.js';
import { MemoryStorage } from '../../../src/raft/storage/memory-storage.js';
import { type ConfState, LogIndex, NodeId, Term } from '../../../src/raft/types.js';
import { ent } from './storage-conformance.js';

const CONF: ConfState = { voters: [NodeId(1)], learners: [] };

type Op =
  | { kind: 'append'; back: number; count: number; term: number }
  | { kind: 'snapshot'; back: number; compactBack: number }
  | { kind: 'install'; ahead: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      back: fc.nat(6),
      count: fc.integer({ min: 1, max: 6 }),
      term: fc.nat(3),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('snapshot' as const),
      back: fc.nat(4),
      compactBack: fc.nat(4),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('install' as const),
      ahead: fc.integer({ min: 1, max: 5 }),
    }),
  },
);

t.test('reopened storage equals the in-memory model', async (t) => {
  const root = t.testdir();
  await t.resolves(
    fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 25 }), async (ops) => {
        const db = new Level(mkdtempSync(join(root, 'run-')));
        await db.open();
        try {
          const disk = await LevelRaftStorage.open(db, { bootstrap: CONF });
          const model = MemoryStorage.bootstrap(CONF);
          let term = 1;
          for (const op of ops) await step(op, disk, model, () => term++);
          await disk.flush();
          const again = await LevelRaftStorage.open(db);
          const snapIndex = model.snapshot().metadata.index;
          if (again.snapshot().metadata.index !== snapIndex) throw new Error('snapshot index');
          if (again.lastIndex() !== model.lastIndex()) {
            throw new Error(`last ${again.lastIndex()} != ${model.lastIndex()}`);
          }
          const lo = LogIndex(snapIndex + 1);
          const hi = LogIndex(model.lastIndex() + 1);
          const a = again.entries(lo, hi).map((e) => `${e.index}/${e.term}/${e.data.length}`);
          const b = model.entries(lo, hi).map((e) => `${e.index}/${e.term}/${e.data.length}`);
          if (a.join() !== b.join()) throw new Error(`log differs:\n${a}\n${b}`);
          if (JSON.stringify(again.initialState()) !== JSON.stringify(model.initialState())) {
            throw new Error('hard state or conf differs');
          }
        } finally {
          await db.close();
        }
      }),
      { numRuns: 40 },
    ),
    '40 random histories survived a reopen',
  );
});

async function step(op: Op, disk: LevelRaftStorage, model: MemoryStorage, nextTerm: () => number) {
  const last = model.lastIndex();
  const first = model.firstIndex();
  if (op.kind === 'append') {
    // Raft never overwrites entries a snapshot covers (they are committed).
    const start = Math.max(first, model.snapshot().metadata.index + 1, last + 1 - op.back);
    const term = nextTerm();
    const entries = Array.from({ length: op.count }, (_, k) => ent(start + k, term, 'x'.repeat(k)));
    model.append(entries);
    const hs = { term: Term(term), vote: NodeId(1), commit: LogIndex(Math.max(0, start - 1)) };
    model.setHardState(hs);
    await disk.persist({ entries, hardState: hs, mustSync: true });
  } else if (op.kind === 'snapshot') {
    const at = LogIndex(last - op.back);
    if (at <= model.snapshot().metadata.index) return;
    model.createSnapshot(at, CONF, Uint8Array.of(1));
    await disk.createSnapshot(at, CONF, Uint8Array.of(1));
    const to = LogIndex(at - op.compactBack);
    if (to < model.firstIndex()) return;
    model.compact(to);
    await disk.compact(to);
  } else {
    const at = LogIndex(last + op.ahead);
    const snap = {
      metadata: { index: at, term: Term(nextTerm()), confState: CONF },
      data: Uint8Array.of(2),
    };
    model.applySnapshot(snap);
    await disk.persist({ snapshot: snap, entries: [], mustSync: true });
  }
}
