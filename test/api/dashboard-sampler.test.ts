/**
 * The dashboard's sampler (src/api/dashboard/sampler.ts): the quantile of a second's
 * observations read from two cumulative histograms lands in the bucket that holds the true
 * quantile and grows with q (fast-check, against the sorted observations); rates are the
 * differences over the interval; the sampler keeps a bounded ring and stops once nobody asks.
 */
import fc from 'fast-check';
import t from 'tap';
import {
  quantileBetween,
  type Reading,
  Sampler,
  sampleBetween,
} from '../../src/api/dashboard/sampler.js';

const LES = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, Infinity];
const cumulative = (values: number[]) =>
  LES.map((le) => ({ le, count: values.filter((v) => v <= le).length }));

t.test('property: the quantile is in the true quantile’s bucket, monotone in q', async (t) => {
  const obs = fc.array(fc.double({ min: 0, max: 2, noNaN: true }), { maxLength: 60 });
  fc.assert(
    fc.property(obs, obs, fc.double({ min: 0.01, max: 1, noNaN: true }), (earlier, now, q) => {
      const before = cumulative(earlier);
      const after = cumulative([...earlier, ...now]);
      const got = quantileBetween(before, after, q);
      if (now.length === 0) return got === null;
      const sorted = [...now].sort((x, y) => x - y);
      const truth = sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
      const i = LES.findIndex((le) => truth <= le);
      const lower = i === 0 ? 0 : LES[i - 1]!;
      const upper = Number.isFinite(LES[i]!) ? LES[i]! : lower;
      const inBucket = got !== null && got >= lower - 1e-12 && got <= upper + 1e-12;
      const higher = quantileBetween(before, after, Math.min(1, q + 0.1));
      return inBucket && higher !== null && higher >= got - 1e-12;
    }),
  );
  t.pass('held');
});

t.test('rates over the interval; a ring of bounded size; stops when nobody looks', async (t) => {
  const a: Reading = { at: 1000, revision: 10, eventsSent: 100, buckets: cumulative([]) };
  const b: Reading = { at: 3000, revision: 30, eventsSent: 500, buckets: cumulative([0.002]) };
  const s = sampleBetween(a, b);
  t.equal(s.writesPerS, 10, '20 revisions in 2 s');
  t.equal(s.eventsPerS, 200, '400 events in 2 s');
  t.ok(s.p50Ms !== null && s.p50Ms > 1 && s.p50Ms <= 5, `p50 ${s.p50Ms} ms in its bucket`);
  t.equal(sampleBetween(a, a).p99Ms, null, 'nothing observed: no latency');

  let now = 0;
  let rev = 0;
  const sampler = new Sampler(
    async () => ({ at: now, revision: (rev += 5), eventsSent: 0, buckets: [] }),
    { capacity: 3, periodMs: 3_600_000, idleMs: 10_000, now: () => now },
  );
  t.teardown(() => sampler.stop());
  sampler.touch();
  t.ok(sampler.running, 'a touch starts it');
  for (let i = 1; i <= 5; i++) {
    now = i * 1000;
    await sampler.tick();
  }
  t.equal(sampler.samples().length, 3, 'the ring keeps its capacity');
  t.same(
    sampler.samples().map((x) => x.writesPerS),
    [5, 5, 5],
  );
  now += 20_000;
  await sampler.tick();
  t.notOk(sampler.running, 'idle for longer than idleMs: stopped');
});
