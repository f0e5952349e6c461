import fc from 'fast-check';
import t from 'tap';
import { checkLinearizable, type HistoryOp, type KvOp } from './index.js';

/** A sequential execution: ops on a few keys, each taking effect at time 100*i. */
const opArb: fc.Arbitrary<KvOp> = fc.oneof(
  fc.record({
    kind: fc.constant('put' as const),
    key: fc.constantFrom('a', 'b', 'c'),
    value: fc.constantFrom('1', '2', '3', '4'),
  }),
  fc.record({ kind: fc.constant('get' as const), key: fc.constantFrom('a', 'b', 'c') }),
);

interface Spec {
  op: KvOp;
  /** How far before / after its linearization point the op's interval reaches. */
  before: number;
  after: number;
  /** The client never learnt the outcome; for puts, whether it took effect anyway. */
  unknown: boolean;
  applied: boolean;
}

const specArb: fc.Arbitrary<Spec> = fc.record({
  op: opArb,
  before: fc.integer({ min: 0, max: 450 }),
  after: fc.integer({ min: 0, max: 450 }),
  unknown: fc.boolean(),
  applied: fc.boolean(),
});

/** Runs the specs sequentially on a map and records what each client saw. */
function record(specs: readonly Spec[], overlapping: boolean): HistoryOp[] {
  const state = new Map<string, string>();
  return specs.map((s, i): HistoryOp => {
    const point = 100 * i + 50;
    const call = overlapping ? point - s.before : 100 * i;
    const ret = overlapping ? point + s.after : 100 * i + 99;
    if (s.op.kind === 'put') {
      const takesEffect = !s.unknown || s.applied;
      if (takesEffect) state.set(s.op.key, s.op.value);
      return s.unknown
        ? { client: i, op: s.op, call, ret: Number.POSITIVE_INFINITY, ok: false }
        : { client: i, op: s.op, call, ret, ok: true };
    }
    const output = state.get(s.op.key) ?? null;
    return s.unknown
      ? { client: i, op: s.op, call, ret: Number.POSITIVE_INFINITY, ok: false }
      : { client: i, op: s.op, call, ret, ok: true, output };
  });
}

t.test('histories of a real sequential execution are accepted', async (t) => {
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(fc.array(specArb, { maxLength: 60 }), (specs) => {
          const r = checkLinearizable(record(specs, true));
          if (!r.ok) throw new Error(r.explanation);
        }),
        { numRuns: 300 },
      ),
    '300 random overlapping histories accepted',
  );
});

t.test('a mutated read in a non-concurrent history is rejected', async (t) => {
  const known = specArb.map((s) => ({ ...s, unknown: false }));
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(
          fc.array(known, { minLength: 1, maxLength: 60 }),
          fc.nat(),
          fc.constantFrom<string | null>(null, '1', '2', '9'),
          (specs, pick, replacement) => {
            const history = record(specs, false);
            const gets = history.filter((h) => h.op.kind === 'get');
            fc.pre(gets.length > 0);
            const victim = gets[pick % gets.length]!;
            fc.pre(victim.output !== replacement);
            victim.output = replacement;
            return !checkLinearizable(history).ok;
          },
        ),
        { numRuns: 300 },
      ),
    '300 mutated histories rejected',
  );
});
