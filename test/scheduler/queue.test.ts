/**
 * The scheduling queue: priority then arrival order, backoff doubling to its cap, the
 * unschedulable set woken by a cluster change (also one that happened while the pod was in
 * flight), updates that do or do not wake a pod, and deletes from every place.
 */
import t from 'tap';
import { SchedulingQueue } from '../../src/scheduler/queue.js';
import { pod } from './fixtures.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('priority first, then arrival', async (t) => {
  const q = new SchedulingQueue();
  t.teardown(() => q.close());
  q.add(pod('a'));
  q.add(pod('b', { spec: { priority: 10 } }));
  q.add(pod('c'));
  q.add(pod('d', { spec: { priority: 10 } }));
  const order = [];
  for (let e = q.pop(); e; e = q.pop()) order.push(e.pod.metadata.name);
  t.same(order, ['b', 'd', 'a', 'c']);
});

t.test('backoff doubles up to its cap', async (t) => {
  const q = new SchedulingQueue({ initialBackoffMs: 1000, maxBackoffMs: 10_000 });
  t.teardown(() => q.close());
  t.same(
    [0, 1, 2, 3, 4, 5, 10].map((n) => q.backoffMs(n)),
    [0, 1000, 2000, 4000, 8000, 10_000, 10_000],
  );
});

t.test('unschedulable pods wait for a cluster change, then go through backoff', async (t) => {
  const q = new SchedulingQueue({ initialBackoffMs: 30, maxBackoffMs: 30 });
  t.teardown(() => q.close());
  q.add(pod('p'));
  const e = q.pop();
  if (!e) throw new Error('no pod');
  q.markUnschedulable(e);
  t.same(q.counts(), { active: 0, backoff: 0, unschedulable: 1, inflight: 0 });
  await sleep(80);
  t.equal(q.pop(), undefined, 'no change: it stays unschedulable');
  q.update(
    { ...pod('p'), status: { phase: 'Pending', conditions: [{ type: 'PodScheduled' }] } },
    false,
  );
  t.equal(q.counts().unschedulable, 1, 'a status-only update does not wake it');
  q.moveAllToActive();
  t.equal(q.counts().backoff, 1, 'a cluster change moves it to backoff');
  await sleep(80);
  t.equal(q.pop()?.pod.metadata.name, 'p', 'and after the backoff it is active again');
});

t.test('a cluster change while the pod was in flight is not lost', async (t) => {
  const q = new SchedulingQueue({ initialBackoffMs: 10, maxBackoffMs: 10 });
  t.teardown(() => q.close());
  q.add(pod('p'));
  const e = q.pop();
  if (!e) throw new Error('no pod');
  q.moveAllToActive(); // a node arrived while the pod was being tried
  q.markUnschedulable(e);
  t.equal(q.counts().unschedulable, 0);
  t.equal(q.counts().backoff, 1, 'retried after backoff instead of parked');
});

t.test('a relevant update wakes an unschedulable pod; deletes leave nothing behind', async (t) => {
  const q = new SchedulingQueue({ initialBackoffMs: 10, maxBackoffMs: 10 });
  t.teardown(() => q.close());
  q.add(pod('p'));
  const e = q.pop();
  if (!e) throw new Error('no pod');
  q.markUnschedulable(e);
  q.update(pod('p', { cpu: '1' }), true);
  t.equal(q.counts().backoff, 1);
  q.delete(pod('p'));
  t.equal(q.size, 0);
  q.add(pod('a'));
  q.delete(pod('a'));
  t.equal(q.pop(), undefined, 'a deleted active pod is not popped');
  q.requeue(pod('b'), 1);
  t.equal(q.counts().backoff, 1, 'a requeued pod waits its backoff');
  q.delete(pod('b'));
  t.same(q.counts(), { active: 0, backoff: 0, unschedulable: 0, inflight: 0 });
});
