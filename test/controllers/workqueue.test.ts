/** The work queue: dedup, one worker per key, re-add while processing, per-key backoff. */
import fc from 'fast-check';
import t from 'tap';
import { WorkQueue } from '../../src/client/k8s/workqueue.js';

t.test('a key waits once however often it is added', async (t) => {
  const q = new WorkQueue();
  q.add('a');
  q.add('a');
  q.add('b');
  t.equal(q.length, 2);
  t.equal(await q.get(), 'a');
  t.equal(await q.get(), 'b');
  t.equal(q.length, 0);
});

t.test('a key added while processing comes back after done, not before', async (t) => {
  const q = new WorkQueue();
  q.add('a');
  const k = await q.get();
  q.add('a');
  t.equal(q.length, 0, 'not handed to a second worker');
  q.done(k as string);
  t.equal(q.length, 1);
  t.equal(await q.get(), 'a');
});

t.test('backoff doubles per failure up to the cap, forget resets it', async (t) => {
  const q = new WorkQueue({ baseDelayMs: 5, maxDelayMs: 100 });
  t.same(
    [0, 1, 2, 3, 10].map((n) => q.backoffMs(n)),
    [5, 10, 20, 40, 100],
  );
  q.addRateLimited('a');
  q.addRateLimited('a');
  t.equal(q.numRequeues('a'), 2);
  q.forget('a');
  t.equal(q.numRequeues('a'), 0);
  // The queue's timers do not hold the process open: this interval does, meanwhile.
  const keep = setInterval(() => {}, 1000);
  t.equal(await q.get(), 'a', 'the delayed add arrives');
  clearInterval(keep);
  q.shutDown();
  t.equal(await q.get(), undefined, 'shut down: no more keys');
});

t.test('property: every added key is handed out, never to two workers at once', async (t) => {
  await t.resolves(
    fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.constantFrom('a', 'b', 'c').map((k) => ({ add: k })),
            fc.constant({ work: true }),
          ),
          {
            maxLength: 60,
          },
        ),
        async (ops) => {
          const q = new WorkQueue();
          const processing = new Set<string>();
          const pending = new Set<string>();
          for (const op of ops) {
            if ('add' in op) {
              q.add(op.add);
              pending.add(op.add);
            } else if (q.length > 0) {
              const k = (await q.get()) as string;
              if (processing.has(k)) return false;
              processing.add(k);
              pending.delete(k);
              processing.delete(k);
              q.done(k);
            }
          }
          // Drain: exactly the keys added since they were last handed out.
          const seen = new Set<string>();
          while (q.length > 0) {
            const k = (await q.get()) as string;
            if (seen.has(k)) return false;
            seen.add(k);
            q.done(k);
          }
          return [...seen].sort().join() === [...pending].sort().join();
        },
      ),
    ),
    'held for every sequence',
  );
});
