/**
 * The lessor alone, on a clock the test moves: the ID range grants pick from, expiry and
 * renewal, time-to-live answers, and the restart of every TTL on leadership.
 */
import t from 'tap';
import { LEASE_ID_LIMIT, Lessor } from '../../src/store/lessor.js';
import type { LeaseId } from '../../src/store/types.js';

function lessorAt(start = 1_000_000) {
  const clock = { ms: start, now: () => clock.ms };
  return { lessor: new Lessor(2, clock), clock };
}

t.test('chosen IDs are positive, below 2^52 and not in use', async (t) => {
  const { lessor } = lessorAt();
  t.equal(
    lessor.chooseId(() => 0.5),
    2 ** 51,
  );
  t.equal(LEASE_ID_LIMIT, 2 ** 52);
  lessor.grantUnsafe((2 ** 51) as LeaseId, 10, 0);
  const draws = [0.5, 0, 0.25];
  const id = lessor.chooseId(() => draws.shift() ?? 0.75);
  t.equal(id, 2 ** 50, 'an ID in use and 0 are drawn again');
  for (let i = 0; i < 1000; i++) {
    const x = lessor.chooseId();
    t.ok(Number.isSafeInteger(x) && x > 0 && x < LEASE_ID_LIMIT, 'in range');
  }
});

t.test('a lease expires on the injected clock; keepalive renews it until then', async (t) => {
  const { lessor, clock } = lessorAt();
  lessor.grantUnsafe(7 as LeaseId, lessor.effectiveTtl(1), clock.ms);
  t.equal(lessor.get(7)?.ttl, 2, 'raised to the minimum TTL');
  clock.ms += 1500;
  t.same(lessor.expired(), []);
  t.equal(lessor.keepAlive(7), 2, 'renewed before its TTL ran out');
  clock.ms += 1999;
  t.same(lessor.expired(), [], 'the renewal restarted the TTL');
  clock.ms += 1;
  t.same(lessor.expired(), [7]);
  t.equal(lessor.keepAlive(7), undefined, 'an expired lease is not renewed (etcd: not found)');
  t.same(lessor.expired(), [7], 'still waiting for its revoke');
  t.equal(lessor.keepAlive(8), undefined, 'an unknown lease');
});

t.test('time-to-live: remaining whole seconds, keys in order, -1 when absent', async (t) => {
  const { lessor, clock } = lessorAt();
  lessor.grantUnsafe(1 as LeaseId, 10, clock.ms);
  lessor.attach(1, 'b');
  lessor.attach(1, 'a');
  clock.ms += 2500;
  const ttl = lessor.timeToLive(1, true);
  t.equal(ttl.ttl, 7, 'truncated');
  t.equal(ttl.grantedTtl, 10);
  t.same(
    ttl.keys.map((k) => Buffer.from(k).toString()),
    ['a', 'b'],
  );
  t.same(lessor.timeToLive(1, false).keys, [], 'keys only when asked');
  clock.ms += 60_000;
  t.equal(lessor.timeToLive(1, false).ttl, 0, 'never below 0');
  t.same(lessor.timeToLive(2, true), { id: 2, ttl: -1, grantedTtl: 0, keys: [] });
});

t.test('refreshAll restarts every TTL from now, as a new leader does', async (t) => {
  const { lessor, clock } = lessorAt();
  lessor.grantUnsafe(1 as LeaseId, 5, clock.ms);
  lessor.grantUnsafe(2 as LeaseId, 50, clock.ms);
  clock.ms += 10_000;
  t.same(lessor.expired(), [1]);
  lessor.refreshAll();
  t.same(lessor.expired(), []);
  t.equal(lessor.timeToLive(1, false).ttl, 5);
  t.equal(lessor.keepAlive(1), 5, 'renewable again');
});
