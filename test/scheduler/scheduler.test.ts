/**
 * The Scheduler in process against the Kubernetes face over a real store: a pod waiting
 * for capacity is bound once a bound pod is deleted (a pod change, not a node change, wakes
 * it); pods for another scheduler and pods created with a nodeName are left alone; a
 * repeated failure with the same text bumps one Event's count; a pod deleted while it
 * waits leaves the queue.
 */
import t from 'tap';
import { KubeClient, Resources } from '../../src/client/k8s/index.js';
import { startScheduler } from '../../src/scheduler/run.js';
import type { Pod } from '../../src/scheduler/types.js';
import { startKube } from '../k8s/harness.js';
import { waitFor } from '../server/helpers.js';
import { node, pod } from './fixtures.js';

t.test('capacity freed by a deleted pod goes to the waiting pod', async (t) => {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  const kube = new KubeClient({ baseUrl: s.url });
  const nodes = kube.resource(Resources.nodes);
  const pods = kube.resource<Pod>(Resources.pods, 'default');
  const events = kube.resource(Resources.events, 'default');
  const n = node('only', { cpu: '1' });
  const created = await nodes.create(n);
  await nodes.updateStatus({ ...created, status: n.status });
  const running = await startScheduler(kube, {
    seed: 1,
    backoff: { initialMs: 50, maxMs: 200 },
  });
  t.teardown(() => running.stop());

  await pods.create(pod('first', { cpu: '1' }));
  await waitFor(
    'first bound',
    async () => (await pods.get('first')).spec?.nodeName === 'only',
    20_000,
  );
  await pods.create(pod('second', { cpu: '1' }));
  await pods.create({
    ...pod('other', { cpu: '1' }),
    spec: { ...pod('x').spec, schedulerName: 'someone-else' },
  });
  await pods.create(pod('pinned', { nodeName: 'elsewhere' }));
  const msg = '0/1 nodes are available: 1 Insufficient cpu.';
  await waitFor(
    'second unschedulable',
    async () =>
      (await pods.get('second')).status?.conditions?.some(
        (c) => c.type === 'PodScheduled' && c.message === msg,
      ) ?? false,
    20_000,
  );
  // A change to the pod itself retries it; the same failure again counts on the same Event.
  await pods.patch('second', { metadata: { labels: { tier: 'web' } } }, 'merge');
  await waitFor(
    'the FailedScheduling event counted twice',
    async () => {
      const list = await events.list({
        fieldSelector: 'involvedObject.name=second,reason=FailedScheduling',
      });
      return Number(list.items[0]?.count ?? 0) >= 2;
    },
    20_000,
  );
  const failed = await events.list({
    fieldSelector: 'involvedObject.name=second,reason=FailedScheduling',
  });
  t.equal(failed.items.length, 1, 'one Event for the repeated failure');
  t.equal(failed.items[0]?.message, msg);

  await pods.delete('first');
  await waitFor(
    'second bound after first went away',
    async () => (await pods.get('second')).spec?.nodeName === 'only',
    20_000,
  );
  t.equal(
    (await pods.get('other')).spec?.nodeName,
    undefined,
    'another scheduler’s pod is left alone',
  );
  const otherEvents = await events.list({ fieldSelector: 'involvedObject.name=other' });
  t.equal(otherEvents.items.length, 0, 'and gets no events from this one');
  t.equal(
    (await pods.get('pinned')).spec?.nodeName,
    'elsewhere',
    'a pod created with a nodeName is not rebound',
  );

  await pods.create(pod('doomed', { cpu: '1' }));
  await waitFor('doomed queued', () => running.scheduler.queue.has(pod('doomed')), 20_000);
  await pods.delete('doomed');
  await waitFor('doomed left the queue', () => !running.scheduler.queue.has(pod('doomed')), 20_000);
  t.equal(running.scheduler.queue.size, 0, 'a deleted pod leaves the queue; nothing else waits');
});
