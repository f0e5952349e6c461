/**
 * Bad input: every invalid request gets its typed error and changes nothing. The whole
 * observable state (every key, current and compacted revision, leases, events published) is
 * compared before and after, through the embedded API and `submit`, and through
 * `applyBatch` (where a failed command changes nothing but the applied index). The
 * reference model must give the same error code. Limits checked against etcd 3.4: 128 ops,
 * nested txns get what the outer one leaves, 1.5 MiB per request.
 */
import { deepStrictEqual } from 'node:assert/strict';
import t, { type Test } from 'tap';
import { type EmbeddedStore, open } from '../../src/store/index.js';
import type { Command, Compare, EventBatch, RequestOp } from '../../src/store/types.js';
import { applyBoth, canon, collect, modelState, outcome, storeState } from './harness.js';
import { bytes, Model } from './model.js';

const b = bytes;
const put = (key: string, value = 'v', o: object = {}): RequestOp => ({
  type: 'put',
  request: { key: b(key), value: b(value), ...o },
});
const range = (key: string, o: object = {}): RequestOp => ({
  type: 'range',
  request: { key: b(key), ...o },
});
const txn = (success: RequestOp[], failure: RequestOp[] = [], compare: Compare[] = []) => ({
  compare,
  success,
  failure,
});
const nested = (success: RequestOp[], failure: RequestOp[] = []): RequestOp => ({
  type: 'txn',
  request: txn(success, failure),
});
const many = <T>(n: number, make: (i: number) => T): T[] =>
  Array.from({ length: n }, (_, i) => make(i));
const cast = (v: unknown) => v as never;
const MiB = 1024 * 1024;

/**
 * The state every case starts from: revision 6, compacted at 3, leases 7 (holding b) and 8.
 *   2 put a   3 put b (lease 7)   4 put c   5 put a   6 put d
 */
async function setup(
  t: Test,
  model: Model,
): Promise<{ store: EmbeddedStore; seen: EventBatch[]; dir: string }> {
  const dir = t.testdir();
  const store = await open({
    dir,
    clock: { now: () => 0 },
    minLeaseTtl: 2,
    leaseCheckIntervalMs: 0,
  });
  t.teardown(() => store.close());
  const seen: EventBatch[] = [];
  collect(store, seen);
  const commands: Command[] = [
    { op: 'leaseGrant', id: 7, ttl: 60 },
    { op: 'leaseGrant', id: 8, ttl: 60 },
    { op: 'put', key: b('a'), value: b('1') },
    { op: 'put', key: b('b'), value: b('2'), lease: 7 },
    { op: 'put', key: b('c'), value: b('3') },
    { op: 'put', key: b('a'), value: b('4') },
    { op: 'put', key: b('d'), value: b('5') },
    { op: 'compact', revision: 3 },
  ];
  for (const c of commands) await applyBoth(store, model, c);
  return { store, seen, dir };
}

/** Invalid write commands, each with the error it must get (from the setup state). */
const BAD_COMMANDS: Array<[string, Command, string]> = [
  // --- request checks ---
  ['put: empty key', { op: 'put', key: b(''), value: b('x') }, 'ERR_EMPTY_KEY'],
  ['delete: empty key', { op: 'deleteRange', key: b('') }, 'ERR_EMPTY_KEY'],
  [
    'txn: empty compare key',
    { op: 'txn', ...txn([], [], [{ key: b(''), target: 'VERSION', result: 'EQUAL', version: 0 }]) },
    'ERR_EMPTY_KEY',
  ],
  ['txn: range of an empty key', { op: 'txn', ...txn([range('')]) }, 'ERR_EMPTY_KEY'],
  [
    'txn: nested put of an empty key',
    { op: 'txn', ...txn([nested([], [put('')])]) },
    'ERR_EMPTY_KEY',
  ],
  [
    'put: ignore_value with a value',
    { op: 'put', key: b('a'), value: b('x'), ignoreValue: true },
    'ERR_VALUE_PROVIDED',
  ],
  [
    'txn: ignore_value with a value',
    { op: 'txn', ...txn([put('a', 'x', { ignoreValue: true })]) },
    'ERR_VALUE_PROVIDED',
  ],
  [
    'put: ignore_lease with a lease',
    { op: 'put', key: b('a'), value: b('x'), lease: 7, ignoreLease: true },
    'ERR_LEASE_PROVIDED',
  ],
  [
    'txn: 129 compares',
    {
      op: 'txn',
      ...txn(
        [],
        [],
        many(129, () => ({ key: b('a'), target: 'VERSION', result: 'EQUAL', version: 0 })),
      ),
    },
    'ERR_TOO_MANY_OPS',
  ],
  ['txn: 129 ops', { op: 'txn', ...txn(many(129, (i) => put(`k${i}`))) }, 'ERR_TOO_MANY_OPS'],
  [
    'txn: 129 failure ops',
    {
      op: 'txn',
      ...txn(
        [],
        many(129, (i) => range(`k${i}`)),
      ),
    },
    'ERR_TOO_MANY_OPS',
  ],
  [
    'txn: nested txn over the budget the outer one leaves (100 + 29)',
    {
      op: 'txn',
      ...txn([...many(99, (i) => range(`k${i}`)), nested(many(29, (i) => put(`n${i}`)))]),
    },
    'ERR_TOO_MANY_OPS',
  ],
  ['txn: one key put twice', { op: 'txn', ...txn([put('x'), put('x')]) }, 'ERR_DUPLICATE_KEY'],
  [
    'txn: a put inside a deleted range',
    {
      op: 'txn',
      ...txn([{ type: 'deleteRange', request: { key: b('a'), rangeEnd: b('c') } }, put('b')]),
    },
    'ERR_DUPLICATE_KEY',
  ],
  [
    'txn: a put and a nested put',
    { op: 'txn', ...txn([put('x'), nested([put('x')])]) },
    'ERR_DUPLICATE_KEY',
  ],
  [
    'txn: puts in two nested txns',
    { op: 'txn', ...txn([nested([put('x')]), nested([], [put('x')])]) },
    'ERR_DUPLICATE_KEY',
  ],
  [
    'put: over 1.5 MiB',
    { op: 'put', key: b('big'), value: new Uint8Array(1.5 * MiB + 1) },
    'ERR_REQUEST_TOO_LARGE',
  ],
  [
    'txn: over 1.5 MiB in total',
    {
      op: 'txn',
      ...txn(
        many(20, (i) => ({
          type: 'put',
          request: { key: b(`k${i}`), value: new Uint8Array(80 * 1024) },
        })),
      ),
    },
    'ERR_REQUEST_TOO_LARGE',
  ],
  // --- the types an embedded caller can get wrong ---
  ['put: key not bytes', { op: 'put', key: cast('a'), value: b('x') }, 'ERR_INVALID_ARGUMENT'],
  ['put: value not bytes', { op: 'put', key: b('a'), value: cast(5) }, 'ERR_INVALID_ARGUMENT'],
  ['put: lease 1.5', { op: 'put', key: b('a'), value: b('x'), lease: 1.5 }, 'ERR_INVALID_ARGUMENT'],
  ['put: lease -1', { op: 'put', key: b('a'), value: b('x'), lease: -1 }, 'ERR_INVALID_ARGUMENT'],
  [
    'put: lease NaN',
    { op: 'put', key: b('a'), value: b('x'), lease: Number.NaN },
    'ERR_INVALID_ARGUMENT',
  ],
  [
    'delete: range_end not bytes',
    { op: 'deleteRange', key: b('a'), rangeEnd: cast('z') },
    'ERR_INVALID_ARGUMENT',
  ],
  ['compact: 2.5', { op: 'compact', revision: 2.5 }, 'ERR_INVALID_ARGUMENT'],
  ['compact: a string', { op: 'compact', revision: cast('4') }, 'ERR_INVALID_ARGUMENT'],
  ['lease grant: ID 0', { op: 'leaseGrant', id: 0, ttl: 5 }, 'ERR_INVALID_ARGUMENT'],
  ['lease grant: TTL 1.5', { op: 'leaseGrant', id: 9, ttl: 1.5 }, 'ERR_INVALID_ARGUMENT'],
  [
    'lease grant: TTL Infinity',
    { op: 'leaseGrant', id: 9, ttl: Number.POSITIVE_INFINITY },
    'ERR_INVALID_ARGUMENT',
  ],
  ['lease revoke: ID -1', { op: 'leaseRevoke', id: -1 }, 'ERR_INVALID_ARGUMENT'],
  [
    'txn: range limit 1.5',
    { op: 'txn', ...txn([range('a', { limit: 1.5 })]) },
    'ERR_INVALID_ARGUMENT',
  ],
  [
    'txn: range revision NaN',
    { op: 'txn', ...txn([range('a', { revision: Number.NaN })]) },
    'ERR_INVALID_ARGUMENT',
  ],
  [
    'txn: compare version 1.5',
    {
      op: 'txn',
      ...txn([], [], [{ key: b('a'), target: 'VERSION', result: 'EQUAL', version: 1.5 }]),
    },
    'ERR_INVALID_ARGUMENT',
  ],
  [
    'txn: compare target unknown',
    { op: 'txn', ...txn([], [], [cast({ key: b('a'), target: 'COLOUR', result: 'EQUAL' })]) },
    'ERR_INVALID_ARGUMENT',
  ],
  [
    'txn: compare not a list',
    { op: 'txn', compare: cast(null), success: [], failure: [] },
    'ERR_INVALID_ARGUMENT',
  ],
  [
    'txn: unknown op',
    { op: 'txn', ...txn([cast({ type: 'frobnicate', request: {} })]) },
    'ERR_INVALID_ARGUMENT',
  ],
  ['unknown command', cast({ op: 'frobnicate' }), 'ERR_INVALID_ARGUMENT'],
  // --- state checks (the request is well-formed; the state says no) ---
  [
    'put: unknown lease',
    { op: 'put', key: b('a'), value: b('x'), lease: 99 },
    'ERR_LEASE_NOT_FOUND',
  ],
  [
    'txn: unknown lease after a good put',
    { op: 'txn', ...txn([put('x'), put('y', 'v', { lease: 99 })]) },
    'ERR_LEASE_NOT_FOUND',
  ],
  ['lease revoke: unknown', { op: 'leaseRevoke', id: 99 }, 'ERR_LEASE_NOT_FOUND'],
  [
    'put: ignore_value on a missing key',
    { op: 'put', key: b('zz'), value: b(''), ignoreValue: true },
    'ERR_KEY_NOT_FOUND',
  ],
  ['compact: a future revision', { op: 'compact', revision: 7 }, 'ERR_FUTURE_REV'],
  [
    'txn: range at a future revision, then a put',
    { op: 'txn', ...txn([range('a', { revision: 7 }), put('x')]) },
    'ERR_FUTURE_REV',
  ],
  ['compact: the compacted revision', { op: 'compact', revision: 3 }, 'ERR_COMPACTED'],
  ['compact: below the compacted revision', { op: 'compact', revision: 2 }, 'ERR_COMPACTED'],
  [
    'txn: range below the compacted revision, then a put',
    { op: 'txn', ...txn([put('x'), range('a', { revision: 2 })]) },
    'ERR_COMPACTED',
  ],
  ['lease grant: existing ID', { op: 'leaseGrant', id: 7, ttl: 5 }, 'ERR_LEASE_EXIST'],
  [
    'lease grant: TTL above 9e9',
    { op: 'leaseGrant', id: 9, ttl: 9_000_000_001 },
    'ERR_LEASE_TTL_TOO_LARGE',
  ],
];

interface Snapshot {
  state: unknown;
  events: unknown;
}

async function snapshot(store: EmbeddedStore, seen: EventBatch[]): Promise<Snapshot> {
  return { state: await storeState(store), events: canon(seen) };
}

t.test('each bad command gets its error and changes nothing (submit)', async (t) => {
  const model = new Model({ minLeaseTtl: 2 });
  const { store, seen, dir } = await setup(t, model);
  const before = await snapshot(store, seen);
  deepStrictEqual(before.state, modelState(model), 'the model agrees on the setup');
  for (const [what, command, code] of BAD_COMMANDS) {
    const got = await outcome(() => store.submit(command));
    t.same(got, { ok: false, code }, what);
    t.same(model.apply(command), { ok: false, code }, `${what} (model)`);
    t.same(await snapshot(store, seen), before, `${what}: nothing changed`);
  }
  await store.close();
  const reopened = await open({ dir, clock: { now: () => 0 }, leaseCheckIntervalMs: 0 });
  t.teardown(() => reopened.close());
  t.same(await storeState(reopened), before.state, 'nothing reached the disk');
});

/** Codes of the limits a member checks before proposing only (its own settings). */
const LIMIT_CODES = new Set(['ERR_TOO_MANY_OPS', 'ERR_REQUEST_TOO_LARGE']);
const BAD_EVERYWHERE = BAD_COMMANDS.filter(([, , code]) => !LIMIT_CODES.has(code));
const OVER_LIMITS = BAD_COMMANDS.filter(([, , code]) => LIMIT_CODES.has(code));

t.test('each bad command fails alone inside a batch (applyBatch)', async (t) => {
  const model = new Model({ minLeaseTtl: 2 });
  const { store, seen } = await setup(t, model);
  const before = await snapshot(store, seen);
  let index = store.appliedIndex;
  for (const [what, command, code] of BAD_EVERYWHERE) {
    const [o] = await store.applyBatch([{ command, index: ++index }], 0);
    t.same(o?.ok === false && o.error.code, code, what);
    t.same(await snapshot(store, seen), before, `${what}: nothing changed`);
    t.equal(store.appliedIndex, index, `${what}: the entry counts as applied`);
  }
  // Neighbours in one batch are unaffected by the failing commands between them. (The
  // commands see each other's effects: the first put makes revision 7 current, so the two
  // "future revision 7" cases pass here; the model says which.)
  const good = (k: string): Command => ({ op: 'put', key: b(k), value: b('ok') });
  const batch = [good('p'), ...BAD_EVERYWHERE.map(([, c]) => c), good('q')];
  const outcomes = await store.applyBatch(
    batch.map((command) => ({ command, index: ++index })),
    0,
  );
  const want = batch.map((c) => model.applyCommitted(c));
  t.same(
    outcomes.map((o) => (o.ok ? 'ok' : o.error.code)),
    want.map((o) => (o.ok ? 'ok' : o.code)),
  );
  t.equal(outcomes.filter((o) => o.ok).length, 4, 'the two puts and the two revision 7 cases');
  t.same(await storeState(store), modelState(model), 'only those applied');
  t.same(canon(seen), canon(model.batches));
});

t.test(
  'a committed entry over this member’s own limits applies (its proposer checked them)',
  async (t) => {
    // Members may run with different --max-txn-ops / --max-request-bytes: an entry one of them
    // proposed must apply on every member alike, so apply checks no limit of its own.
    t.ok(OVER_LIMITS.length >= 4, 'the table has limit cases');
    const model = new Model({ minLeaseTtl: 2 });
    const { store, seen } = await setup(t, model);
    let index = store.appliedIndex;
    for (const [what, command, code] of OVER_LIMITS) {
      t.same(
        await outcome(() => store.submit(command)),
        { ok: false, code },
        `${what}: submit refuses`,
      );
      const [o] = await store.applyBatch([{ command, index: ++index }], 0);
      const want = model.applyCommitted(command);
      t.equal(o?.ok, true, `${what}: applied as a committed entry`);
      t.equal(want.ok, true, `${what}: the model applies it too`);
    }
    t.same(await storeState(store), modelState(model), 'the same state as the model');
    t.same(canon(seen), canon(model.batches));
  },
);

t.test('bad reads get their error', async (t) => {
  const model = new Model({ minLeaseTtl: 2 });
  const { store, seen } = await setup(t, model);
  const before = await snapshot(store, seen);
  const reads: Array<[string, () => Promise<unknown>, string]> = [
    ['range: empty key', () => store.range({ key: b('') }), 'ERR_EMPTY_KEY'],
    ['get: empty key', () => store.get(''), 'ERR_EMPTY_KEY'],
    ['range: future revision', () => store.range({ key: b('a'), revision: 7 }), 'ERR_FUTURE_REV'],
    ['range: compacted revision', () => store.range({ key: b('a'), revision: 2 }), 'ERR_COMPACTED'],
    ['range: limit 1.5', () => store.range({ key: b('a'), limit: 1.5 }), 'ERR_INVALID_ARGUMENT'],
    ['range: key not bytes', () => store.range({ key: cast(1) }), 'ERR_INVALID_ARGUMENT'],
    [
      'range: revision Infinity',
      () => store.range({ key: b('a'), revision: Number.POSITIVE_INFINITY }),
      'ERR_INVALID_ARGUMENT',
    ],
    ['lease renew: unknown', async () => store.leaseRenew(99), 'ERR_LEASE_NOT_FOUND'],
    [
      'history: below the compacted revision',
      () => drain(store.history(cast(2), { key: b('a') })),
      'ERR_COMPACTED',
    ],
    [
      'history: beyond the next revision',
      () => drain(store.history(cast(8), { key: b('a') })),
      'ERR_FUTURE_REV',
    ],
  ];
  for (const [what, read, code] of reads) {
    t.same(await outcome(read), { ok: false, code }, what);
  }
  for (const [what, request, code] of [
    ['empty key', { key: b('') }, 'ERR_EMPTY_KEY'],
    ['future', { key: b('a'), revision: 7 }, 'ERR_FUTURE_REV'],
    ['compacted', { key: b('a'), revision: 2 }, 'ERR_COMPACTED'],
  ] as const) {
    t.same(model.range(request), { ok: false, code }, `model: ${what}`);
  }
  t.same(await snapshot(store, seen), before, 'nothing changed');
});

async function drain(it: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of it);
}

t.test('the limits themselves are allowed', async (t) => {
  const model = new Model({ minLeaseTtl: 2 });
  const { store } = await setup(t, model);
  const ok: Array<[string, Command]> = [
    ['128 ops', { op: 'txn', ...txn(many(128, (i) => put(`k${i}`))) }],
    [
      'a nested txn within the budget (100 + 28)',
      {
        op: 'txn',
        ...txn([...many(99, (i) => range(`k${i}`)), nested(many(28, (i) => put(`n${i}`)))]),
      },
    ],
    [
      'a key put in both branches of a nested txn',
      { op: 'txn', ...txn([nested([put('x')], [put('x')])]) },
    ],
    ['a put of 1 MiB', { op: 'put', key: b('big'), value: new Uint8Array(MiB) }],
    ['a range at the compacted revision', { op: 'txn', ...txn([range('a', { revision: 3 })]) }],
  ];
  for (const [what, command] of ok) {
    const got = await applyBoth(store, model, command);
    t.equal(got.ok, true, what);
  }
  t.same(await storeState(store), modelState(model));
});
