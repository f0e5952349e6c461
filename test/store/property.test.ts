/**
 * The store against the reference model (test/store/model.ts): random sequences of writes,
 * reads, compactions, lease grants and revokes over a small key alphabet, with the database
 * closed and reopened mid-sequence. Every response (result or error code), every event
 * batch, the revisions, the leases and the whole keyspace must agree.
 *
 * Replay a failure: fast-check prints `seed` and `path` (each property also logs its seed as
 * a comment); run the one property with them:
 *   STORE_PROP_SEED=<seed> STORE_PROP_PATH=<path> \
 *     npx tap test/store/property.test.ts --grep="<start of the property's name>"
 * STORE_PROP_RUNS scales the number of runs (default 1: 150, 60 and 60 runs, about 20 s on
 * an idle 2-core machine; 6 was used for a soak run).
 */
import { deepStrictEqual } from 'node:assert/strict';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { type EmbeddedStore, open } from '../../src/store/index.js';
import type { Command, EventBatch, KeyRange } from '../../src/store/types.js';
import {
  type AOp,
  type AWrite,
  opArb,
  rangeArb,
  resolveRange,
  resolveWrite,
  txnArb,
  writeArb,
} from './arbitraries.js';
import {
  canon,
  collect,
  describe,
  modelState,
  outcome,
  sameOutcome,
  storeState,
} from './harness.js';
import { bytes, inRange, Model, type Outcome, str } from './model.js';

const MIN_LEASE_TTL = 2;
const SCALE = Number(process.env.STORE_PROP_RUNS ?? 1);
const SEED = process.env.STORE_PROP_SEED ? Number(process.env.STORE_PROP_SEED) : undefined;
const PATH = process.env.STORE_PROP_PATH;

function params(numRuns: number): fc.Parameters<unknown> {
  const seed = SEED ?? (Date.now() ^ (Math.random() * 0x100000000)) | 0;
  return {
    numRuns: Math.max(1, Math.round(numRuns * SCALE)),
    seed,
    ...(PATH ? { path: PATH } : {}),
    endOnFailure: PATH !== undefined,
  };
}

/** One store under test, reopened on demand, with every batch it published. */
class Subject {
  store!: EmbeddedStore;
  readonly seen: EventBatch[] = [];
  private compared = 0;

  constructor(readonly dir: string) {}

  async open(): Promise<void> {
    this.store = await open({
      dir: this.dir,
      clock: { now: () => 0 },
      minLeaseTtl: MIN_LEASE_TTL,
      leaseCheckIntervalMs: 0,
      sync: false,
    });
    collect(this.store, this.seen);
  }

  async reopen(model: Model): Promise<void> {
    await this.store.close();
    await this.open();
    await this.sameState(model, 'after reopen');
  }

  /** New batches since the last call equal the model's new batches. */
  sameEvents(model: Model, what: string): void {
    deepStrictEqual(
      canon(this.seen.slice(this.compared)),
      canon(model.batches.slice(this.compared)),
      `events ${what}`,
    );
    this.compared = this.seen.length;
  }

  async sameState(model: Model, what: string): Promise<void> {
    deepStrictEqual(await storeState(this.store), modelState(model), `state ${what}`);
  }

  /** The store's history replay (what a watch resumes from) against the model's batches. */
  async sameHistory(model: Model, range: KeyRange): Promise<void> {
    const from = Math.max(model.compactRevision + 1, 1);
    // Includes revisions where a key is put and then deleted (etcd allows a put in one nested
    // txn and a delete in a later one): the replayed PUT must carry its own value.
    const got: EventBatch[] = [];
    for await (const batch of this.store.history(from as never, range)) got.push(batch);
    const want = model.batches
      .filter((b) => b.revision >= from)
      .map((b) => ({
        revision: b.revision,
        events: b.events.filter((e) => inRange(str(e.kv.key), range.key, range.rangeEnd)),
      }))
      .filter((b) => b.events.length > 0);
    deepStrictEqual(canon(got), canon(want), `history from ${from} of ${describe(range)}`);
  }

  async finish(model: Model): Promise<void> {
    await this.sameState(model, 'at the end');
    await this.sameHistory(model, { key: Uint8Array.of(0), rangeEnd: Uint8Array.of(0) });
    await this.sameHistory(model, { key: bytes('a'), rangeEnd: bytes('b') });
    await this.reopen(model);
    await this.store.close();
  }
}

let runNo = 0;
function subjectIn(base: string): Subject {
  return new Subject(join(base, `run-${runNo++}`));
}

function asOutcome(o: { ok: true; result: unknown } | { ok: false; error: { code: string } }) {
  return o.ok ? o : { ok: false as const, code: o.error.code };
}

async function runOps(base: string, ops: AOp[]): Promise<void> {
  const model = new Model({ minLeaseTtl: MIN_LEASE_TTL });
  const s = subjectIn(base);
  await s.open();
  try {
    for (const [i, op] of ops.entries()) {
      const at = `at step ${i}`;
      if (op.t === 'reopen') {
        await s.reopen(model);
      } else if (op.t === 'range') {
        const r = resolveRange(op.r, model);
        const got = await outcome(() => s.store.range(r));
        sameOutcome(got, model.range(r), `range ${describe(r)} ${at}`);
      } else {
        const c = resolveWrite(op, model);
        const got = await outcome(() => s.store.submit(c));
        sameOutcome(got, model.apply(c), `${describe(c)} ${at}`);
      }
      s.sameEvents(model, at);
      deepStrictEqual(
        [s.store.currentRevision, s.store.compactRevision],
        [model.revision, model.compactRevision],
        `revisions ${at}`,
      );
    }
    await s.finish(model);
  } finally {
    await s.store.close();
  }
}

/** Applies writes as one `applyBatch`, so they meet in the store's overlay; checks each outcome. */
async function applyBatchBoth(s: Subject, model: Model, writes: AWrite[], at: string) {
  const commands: Command[] = [];
  const want: Outcome<unknown>[] = [];
  for (const w of writes) {
    const c = resolveWrite(w, model);
    commands.push(c);
    want.push(model.applyCommitted(c));
  }
  let index = s.store.appliedIndex;
  const got = await s.store.applyBatch(
    commands.map((command) => ({ command, index: ++index })),
    0,
  );
  for (const [i, o] of got.entries()) {
    sameOutcome(asOutcome(o), want[i] as Outcome<unknown>, `${describe(commands[i])} ${at}`);
  }
  s.sameEvents(model, at);
  deepStrictEqual(s.store.appliedIndex, index, `applied index ${at}`);
}

type BatchStep = { t: 'batch'; writes: AWrite[] } | Extract<AOp, { t: 'range' | 'reopen' }>;

async function runBatches(base: string, steps: BatchStep[]): Promise<void> {
  const model = new Model({ minLeaseTtl: MIN_LEASE_TTL });
  const s = subjectIn(base);
  await s.open();
  try {
    for (const [i, step] of steps.entries()) {
      const at = `at step ${i}`;
      if (step.t === 'batch') await applyBatchBoth(s, model, step.writes, at);
      else if (step.t === 'reopen') await s.reopen(model);
      else {
        const r = resolveRange(step.r, model);
        sameOutcome(await outcome(() => s.store.range(r)), model.range(r), `range ${at}`);
      }
    }
    await s.finish(model);
  } finally {
    await s.store.close();
  }
}

t.test('random operations agree with the model, across reopens', async (t) => {
  const base = t.testdir();
  const p = params(150);
  t.comment(`seed ${p.seed}`);
  await t.resolves(
    fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 60, size: 'max' }), (ops) => runOps(base, ops)),
      p,
    ),
    'every response, event batch and state agreed',
  );
});

const batchStep: fc.Arbitrary<BatchStep> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(writeArb, { minLength: 2, maxLength: 8 })
      .map((writes) => ({ t: 'batch' as const, writes })),
  },
  { weight: 2, arbitrary: rangeArb.map((r) => ({ t: 'range' as const, r })) },
  { weight: 1, arbitrary: fc.constant({ t: 'reopen' as const }) },
);

t.test('commands applied together in one batch agree with the model', async (t) => {
  const base = t.testdir();
  const p = params(60);
  t.comment(`seed ${p.seed}`);
  await t.resolves(
    fc.assert(
      fc.asyncProperty(fc.array(batchStep, { minLength: 4, maxLength: 12 }), (steps) =>
        runBatches(base, steps),
      ),
      p,
    ),
    'every outcome of every batch agreed',
  );
});

/** A txn that reads a past revision (and may write), between other writes of one batch. */
const pastReadTxn: fc.Arbitrary<AWrite> = fc
  .tuple(txnArb, rangeArb, fc.integer({ min: 0, max: 1000 }), fc.boolean())
  .map(([txn, r, frac, inSuccess]) => {
    const read = { type: 'range' as const, r: { ...r, revision: { frac } } };
    // Reads in both branches, before and after the branch's writes.
    const [first, second] = inSuccess ? [txn.success, txn.failure] : [txn.failure, txn.success];
    return { t: 'txn', r: { ...txn, success: [read, ...first, read], failure: [...second, read] } };
  });

const middleBatch: fc.Arbitrary<BatchStep> = fc
  .tuple(
    fc.array(writeArb, { minLength: 1, maxLength: 5 }),
    pastReadTxn,
    fc.array(writeArb, { minLength: 1, maxLength: 5 }),
  )
  .map(([before, txn, after]) => ({ t: 'batch', writes: [...before, txn, ...after] }));

t.test(
  'a txn reading a past revision in the middle of a batch agrees with the model',
  async (t) => {
    const base = t.testdir();
    const p = params(60);
    t.comment(`seed ${p.seed}`);
    await t.resolves(
      fc.assert(
        fc.asyncProperty(
          fc.array(fc.oneof({ weight: 3, arbitrary: middleBatch }, batchStep), {
            minLength: 3,
            maxLength: 8,
          }),
          (steps) => runBatches(base, steps),
        ),
        p,
      ),
      'past reads inside batches agreed',
    );
  },
);
