/**
 * The leader's background duties, on a stepped clock: periodic and revision auto-compaction,
 * and lease expiry proposing each revoke once.
 */
import t from 'tap';
import { AutoCompactor } from '../../src/server/compaction.js';
import { LeaseReaper } from '../../src/server/leases.js';
import { silentLogger } from '../../src/server/logger.js';
import { Store } from '../../src/store/store.js';
import type { LeaseId } from '../../src/store/types.js';

function compactor(retention: ConstructorParameters<typeof AutoCompactor>[0]['retention']) {
  const state = { now: 0, revision: 10, compacted: 0, calls: [] as number[] };
  const c = new AutoCompactor({
    retention,
    now: () => state.now,
    currentRevision: () => state.revision,
    compactRevision: () => state.compacted,
    compact: async (rev) => {
      state.calls.push(rev);
      state.compacted = rev;
    },
    logger: silentLogger(),
    revisionCheckMs: 1000,
  });
  c.start(); // takes the first sample at now = 0
  c.stop(); // the test steps it by hand
  return { c, state };
}

t.test('periodic: compacts to the revision of one window ago, once per window', async (t) => {
  const { c, state } = compactor({ kind: 'periodic', ms: 1000 });
  const at = async (now: number, revision: number) => {
    state.now = now;
    state.revision = revision;
    await c.step();
  };
  await at(100, 12);
  t.same(state.calls, [], 'nothing is a window old yet');
  await at(1000, 20);
  t.same(state.calls, [10], 'the revision sampled a window ago');
  await at(1500, 25);
  t.same(state.calls, [10], 'at most once per window');
  await at(2000, 30);
  t.same(state.calls, [10, 20]);
});

t.test('revision: keeps the last N revisions', async (t) => {
  const { c, state } = compactor({ kind: 'revision', revisions: 5 });
  state.revision = 4;
  await c.step();
  t.same(state.calls, [], 'not enough history yet');
  state.revision = 30;
  await c.step();
  await c.step();
  t.same(state.calls, [25], 'compacted once to current - 5');
});

t.test('off: never compacts', async (t) => {
  const { c, state } = compactor({ kind: 'off' });
  state.revision = 1000;
  await c.step();
  t.same(state.calls, []);
  t.equal(c.running, false);
});

t.test('expired leases are revoked once each, oldest expiry first', async (t) => {
  let now = 1_000_000;
  const store = await Store.open({ dir: t.testdir(), clock: { now: () => now }, sync: false });
  t.teardown(() => store.close());
  await store.applyBatch([
    { index: 1, command: { op: 'leaseGrant', id: 2, ttl: 10 } },
    { index: 2, command: { op: 'leaseGrant', id: 1, ttl: 5 } },
    { index: 3, command: { op: 'leaseGrant', id: 3, ttl: 100 } },
  ]);
  const revoked: LeaseId[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  const reaper = new LeaseReaper({
    store,
    logger: silentLogger(),
    revoke: async (id) => {
      revoked.push(id);
      await gate;
    },
  });
  reaper.round();
  t.same(revoked, [], 'nothing expired yet');
  now += 11_000;
  reaper.round();
  reaper.round(); // the revokes are still in flight: not proposed again
  t.same(revoked, [1, 2]);
  release();
  await new Promise((r) => setImmediate(r));
});
