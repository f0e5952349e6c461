/**
 * Alarms in the store: raised and cleared by commands, persisted with the data (reopen and
 * Raft snapshot), and apply refuses what etcd refuses under each alarm. A property test
 * drives random alarm commands and writes against a small model.
 */
import fc from 'fast-check';
import t from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import { open } from '../../src/store/index.js';
import type { AlarmType, Command } from '../../src/store/types.js';

const b = (s: string) => new Uint8Array(Buffer.from(s));
const put = (k: string): Command => ({ op: 'put', key: b(k), value: b('v') });
const alarm = (action: 'activate' | 'deactivate', memberId: string, a: AlarmType): Command => ({
  op: 'alarm',
  action,
  memberId,
  alarm: a,
});

async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (isEtceteraError(e)) return e.code;
    throw e;
  }
}

t.test('an alarm survives a reopen and travels in the store snapshot', async (t) => {
  const dir = t.testdir();
  const a = await open({ dir: `${dir}/a`, leaseCheckIntervalMs: 0 });
  await a.submit(alarm('activate', '18446744073709551615', 'NOSPACE'));
  const r = await a.submit(alarm('activate', '7', 'CORRUPT'));
  t.same(r, {
    op: 'alarm',
    result: { revision: 1, alarms: [{ memberId: '7', alarm: 'CORRUPT' }] },
  });
  const snap = await a.exportSnapshot();
  await a.close();
  const reopened = await open({ dir: `${dir}/a`, leaseCheckIntervalMs: 0 });
  const expected = [
    { memberId: '7', alarm: 'CORRUPT' },
    { memberId: '18446744073709551615', alarm: 'NOSPACE' },
  ];
  t.same(reopened.alarms(), expected, 'reopened store keeps its alarms');
  t.equal(await outcome(reopened.put('k', 'v')), 'ERR_CORRUPT_CLUSTER');
  await reopened.close();
  const other = await open({ dir: `${dir}/b`, leaseCheckIntervalMs: 0 });
  t.teardown(() => other.close());
  t.same(other.alarms(), []);
  await other.restoreSnapshot(snap);
  t.same(other.alarms(), expected, 'a restored snapshot carries the alarms');
  const cleared = await other.submit(alarm('deactivate', '7', 'CORRUPT'));
  t.same(cleared.op === 'alarm' && cleared.result.alarms, [{ memberId: '7', alarm: 'CORRUPT' }]);
  const again = await other.submit(alarm('deactivate', '7', 'CORRUPT'));
  t.same(again.op === 'alarm' && again.result.alarms, [], 'clearing an absent alarm answers none');
});

t.test('what each alarm refuses, as etcd', async (t) => {
  const s = await open({ dir: t.testdir(), leaseCheckIntervalMs: 0 });
  t.teardown(() => s.close());
  await s.put('a', '1');
  const lease = await s.leaseGrant(60);
  const readOnlyTxn: Command = {
    op: 'txn',
    compare: [],
    success: [{ type: 'range', request: { key: b('a') } }],
    failure: [],
  };
  // The compare fails, so the (nested) put would not even run: etcd still counts it.
  const txnPutInFailure: Command = {
    op: 'txn',
    compare: [{ key: b('a'), target: 'VERSION', result: 'EQUAL', version: 99 }],
    success: [],
    failure: [
      {
        type: 'txn',
        request: {
          compare: [],
          success: [{ type: 'put', request: { key: b('x'), value: b('1') } }],
          failure: [],
        },
      },
    ],
  };
  const txnDelete: Command = {
    op: 'txn',
    compare: [],
    success: [{ type: 'deleteRange', request: { key: b('zz') } }],
    failure: [],
  };
  const cases: Array<[string, () => Command]> = [
    ['put', () => put('p')],
    ['txn with a put in the failure branch', () => txnPutInFailure],
    ['lease grant', () => ({ op: 'leaseGrant', id: 77, ttl: 60 })],
    ['delete', () => ({ op: 'deleteRange', key: b('nothing') })],
    ['txn that deletes', () => txnDelete],
    ['read-only txn', () => readOnlyTxn],
    ['compaction', () => ({ op: 'compact', revision: 1 })],
    ['lease revoke', () => ({ op: 'leaseRevoke', id: lease.id })],
  ];
  const expected: Record<'NOSPACE' | 'CORRUPT', string[]> = {
    NOSPACE: ['ERR_NO_SPACE', 'ERR_NO_SPACE', 'ERR_NO_SPACE', 'ok', 'ok', 'ok', 'ok', 'ok'],
    CORRUPT: [
      'ERR_CORRUPT_CLUSTER',
      'ERR_CORRUPT_CLUSTER',
      'ERR_CORRUPT_CLUSTER',
      'ERR_CORRUPT_CLUSTER',
      'ERR_CORRUPT_CLUSTER',
      'ok',
      'ERR_CORRUPT_CLUSTER',
      'ERR_CORRUPT_CLUSTER',
    ],
  };
  for (const type of ['CORRUPT', 'NOSPACE'] as const) {
    await s.submit(alarm('activate', '1', type));
    const before = s.currentRevision;
    const got: string[] = [];
    for (const [, c] of cases) got.push(await outcome(s.submit(c())));
    t.same(got, expected[type], `under ${type}: ${cases.map(([n]) => n).join(', ')}`);
    if (type === 'CORRUPT') t.equal(s.currentRevision, before, 'nothing changed under CORRUPT');
    await s.submit(alarm('deactivate', '1', type));
  }
  t.equal(await outcome(s.put('after', 'x')), 'ok', 'writes work again once cleared');
});

t.test('bad alarm commands are refused and change nothing', async (t) => {
  const s = await open({ dir: t.testdir(), leaseCheckIntervalMs: 0 });
  t.teardown(() => s.close());
  const bad: Command[] = [
    { op: 'alarm', action: 'activate', memberId: '-1', alarm: 'NOSPACE' },
    { op: 'alarm', action: 'activate', memberId: '18446744073709551616', alarm: 'NOSPACE' },
    { op: 'alarm', action: 'activate', memberId: '1', alarm: 'NONE' as AlarmType },
    { op: 'alarm', action: 'raise' as 'activate', memberId: '1', alarm: 'NOSPACE' },
  ];
  for (const c of bad) t.equal(await outcome(s.submit(c)), 'ERR_INVALID_ARGUMENT');
  t.same(s.alarms(), []);
});

t.test('property: alarms and refusals follow the model', async (t) => {
  const dir = t.testdir();
  let n = 0;
  const op = fc.oneof(
    fc.record({
      kind: fc.constant('alarm' as const),
      action: fc.constantFrom('activate' as const, 'deactivate' as const),
      memberId: fc.constantFrom('1', '2', '3'),
      alarm: fc.constantFrom('NOSPACE' as const, 'CORRUPT' as const),
    }),
    fc.record({ kind: fc.constantFrom('put' as const, 'del' as const) }),
  );
  await t.resolves(
    fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 25 }), async (ops) => {
        const path = `${dir}/s${n++}`;
        let s = await open({ dir: path, leaseCheckIntervalMs: 0 });
        const model = new Set<string>();
        try {
          for (const [i, o] of ops.entries()) {
            if (o.kind === 'alarm') {
              await s.submit(alarm(o.action, o.memberId, o.alarm));
              const k = `${o.memberId}/${o.alarm}`;
              if (o.action === 'activate') model.add(k);
              else model.delete(k);
            } else {
              const has = (a: string) => [...model].some((k) => k.endsWith(`/${a}`));
              const want = has('CORRUPT')
                ? 'ERR_CORRUPT_CLUSTER'
                : o.kind === 'put' && has('NOSPACE')
                  ? 'ERR_NO_SPACE'
                  : 'ok';
              const got = await outcome(
                o.kind === 'put'
                  ? s.submit(put(`k${i}`))
                  : s.submit({ op: 'deleteRange', key: b('k') }),
              );
              if (got !== want) return false;
            }
            if (i % 7 === 6) {
              await s.close();
              s = await open({ dir: path, leaseCheckIntervalMs: 0 });
            }
          }
          const listed = s.alarms().map((a) => `${a.memberId}/${a.alarm}`);
          return JSON.stringify([...listed].sort()) === JSON.stringify([...model].sort());
        } finally {
          await s.close();
        }
      }),
      { numRuns: 40 },
    ),
    'alarms and refusals match the model over 40 runs',
  );
});
