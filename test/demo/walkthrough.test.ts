/**
 * `npm run demo`'s walkthrough, run once against `serve --control-plane --nodes 3` in a child
 * process (the CLI as the multi-process tests compile it), with kubectl when it is on PATH,
 * else through src/client: the states it reports are checked — 6 Pods Ready spread over the
 * 3 zones with IPs from the cluster CIDR, 9 after the scale, the rollout to the new image
 * within maxUnavailable / maxSurge at every change seen, the tainted node emptied and its
 * Pods replaced elsewhere, and the member's exit code 0 after SIGTERM.
 */
import t from 'tap';
import { type PodView, runWalkthrough } from '../../demo/walkthrough.js';
import { findKubectl } from '../controllers/helpers.js';
import { compileCli } from '../server/procs/compile.js';

t.test('the demo walks through the control plane', async (t) => {
  const cli = await compileCli();
  const kubectl = findKubectl();
  if (!kubectl) t.comment('kubectl is not on PATH: the walkthrough goes through src/client');
  const lines: string[] = [];
  const r = await runWalkthrough({
    command: [process.execPath, cli],
    kubectl,
    readinessDelayMs: 100,
    log: (l) => lines.push(l),
  });
  t.equal(r.via, kubectl ? 'kubectl' : 'client');
  t.same(
    r.nodes.map((n) => n.zone),
    ['zone-a', 'zone-b', 'zone-c'],
    'three nodes in three zones',
  );
  const zones = (vs: PodView[]) => {
    const c = new Map<string, number>();
    for (const v of vs) c.set(v.zone, (c.get(v.zone) ?? 0) + 1);
    return [...c.values()];
  };
  const allReady = (vs: PodView[], image: string) =>
    vs.every((v) => v.ready && v.image === image && /^10\.244\.\d+\.\d+$/.test(v.ip) && v.node);

  t.equal(r.created.length, 6, '6 Pods after the create');
  t.ok(allReady(r.created, 'nginx:1.27'), 'all Ready on a node with an IP');
  const spread = zones(r.created);
  t.equal(spread.length, 3, 'every zone has Pods');
  t.ok(Math.max(...spread) - Math.min(...spread) <= 1, `spread over the zones (${spread})`);
  t.equal(new Set(r.created.map((v) => v.ip)).size, 6, 'one IP each');

  t.equal(r.scaled.length, 9, '9 Pods after the scale');
  t.ok(allReady(r.scaled, 'nginx:1.27'));

  t.equal(r.rollout.pods.length, 9);
  t.ok(allReady(r.rollout.pods, 'nginx:1.28'), 'all on the new image');
  t.equal(r.rollout.revision, '2');
  t.ok(r.rollout.minReady >= 7, `ready Pods never below 9 − 2 (lowest ${r.rollout.minReady})`);
  t.ok(r.rollout.maxPods <= 12, `Pods never above 9 + 3 (highest ${r.rollout.maxPods})`);

  t.ok(r.taint.evicted.length > 0, 'the tainted node had Pods');
  t.equal(r.taint.pods.length, 9, '9 Pods after the taint');
  t.ok(allReady(r.taint.pods, 'nginx:1.28'));
  t.notOk(
    r.taint.pods.some((v) => v.node === r.taint.node || r.taint.evicted.includes(v.name)),
    'none on the tainted node, the evicted ones replaced',
  );
  t.equal(r.exitCode, 0, 'the member exits 0 on SIGTERM');
  t.ok(
    lines.some((l) => / scheduled on node-\d \(zone-[abc]\)/.test(l)) &&
      lines.some((l) => / Ready on node-\d \(zone-[abc]\) at 10\.244\./.test(l)),
    'it printed the Pods being scheduled and becoming Ready',
  );
});
