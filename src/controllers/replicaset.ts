/**
 * The ReplicaSet controller: keeps `spec.replicas` active Pods for each ReplicaSet. It
 * adopts Pods that match the selector and have no controller (a controller reference is
 * added, guarded by the Pod's resourceVersion), releases owned Pods that stopped matching,
 * creates missing Pods from the template (generateName `<rs>-`, ownerReferences with
 * controller=true and blockOwnerDeletion), deletes surplus ones (unscheduled, then pending,
 * then not ready, then the most recently ready first), and writes status: replicas,
 * fullyLabeledReplicas, readyReplicas, availableReplicas (ready for minReadySeconds),
 * observedGeneration. A ReplicaSet being deleted is left to the garbage collector.
 */
import { controllerOf, ignoreNotFound, ownerReference } from '../client/k8s/conflict.js';
import type { Informer } from '../client/k8s/informer.js';
import { type LabelSelector, selectorMatches } from '../client/k8s/selector.js';
import { type KubeObject, objectKey, Resources } from '../client/k8s/types.js';
import {
  type ControllerContext,
  controllerKey,
  isPodActive,
  isPodAvailable,
  isPodReady,
  type PodLike,
  podCondition,
  splitKey,
} from './lib/context.js';
import { Expectations } from './lib/expectations.js';
import { Controller, type ReconcileResult } from './runtime/controller.js';

export interface ReplicaSetLike extends KubeObject {
  spec?: {
    replicas?: number;
    minReadySeconds?: number;
    selector?: LabelSelector;
    template?: { metadata?: KubeObject['metadata']; spec?: Record<string, unknown> };
  };
  status?: {
    replicas?: number;
    fullyLabeledReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    observedGeneration?: number;
    [k: string]: unknown;
  };
}

/** Most Pods one reconcile creates or deletes (the rest on the next round). */
const BURST = 500;

export function rankForDeletion(pods: PodLike[]): PodLike[] {
  const score = (p: PodLike): number[] => {
    const assigned = p.spec?.nodeName ? 1 : 0;
    const phase = p.status?.phase === 'Pending' ? 0 : p.status?.phase === 'Unknown' ? 1 : 2;
    const ready = isPodReady(p) ? 1 : 0;
    const since = podCondition(p, 'Ready')?.lastTransitionTime;
    // More recently ready first: a negative age sorts later.
    const readyAt = ready && since ? -Date.parse(since) : 0;
    return [assigned, phase, ready, readyAt];
  };
  return [...pods].sort((a, b) => {
    const sa = score(a);
    const sb = score(b);
    for (let i = 0; i < sa.length; i++) {
      const d = (sa[i] as number) - (sb[i] as number);
      if (d !== 0) return d;
    }
    return 0;
  });
}

export class ReplicaSetController {
  readonly controller: Controller;
  readonly expectations: Expectations;
  private readonly rs: Informer<ReplicaSetLike>;
  private readonly pods: Informer<PodLike>;
  private readonly now: () => number;

  constructor(private readonly ctx: ControllerContext) {
    this.now = ctx.now ?? Date.now;
    this.expectations = new Expectations(this.now);
    this.controller = new Controller('replicaset', (k) => this.reconcile(k), {
      ...(ctx.logger ? { logger: ctx.logger } : {}),
    });
    this.rs = ctx.informers.for<ReplicaSetLike>(Resources.replicaSets);
    this.pods = ctx.informers.for<PodLike>(Resources.pods);
    this.rs.addHandlers({
      onAdd: (o) => this.controller.enqueue(objectKey(o)),
      onUpdate: (_o, n) => this.controller.enqueue(objectKey(n)),
      onDelete: (o) => {
        this.expectations.forgetOwner(objectKey(o));
        this.controller.enqueue(objectKey(o));
      },
    });
    this.pods.addHandlers({
      onAdd: (p) => {
        const owner = controllerKey(p, 'ReplicaSet');
        if (owner) {
          this.expectations.observedAdd(owner);
          this.controller.enqueue(owner);
        } else this.enqueueMatching(p);
      },
      onUpdate: (o, p) => {
        const owner = controllerKey(p, 'ReplicaSet');
        const before = controllerKey(o, 'ReplicaSet');
        if (owner && p.metadata.deletionTimestamp && !o.metadata.deletionTimestamp) {
          this.expectations.observedDelete(owner, objectKey(p));
        }
        if (before && before !== owner) this.controller.enqueue(before);
        if (owner) this.controller.enqueue(owner);
        else this.enqueueMatching(p);
      },
      onDelete: (p) => {
        const owner = controllerKey(p, 'ReplicaSet');
        if (owner) {
          this.expectations.observedDelete(owner, objectKey(p));
          this.controller.enqueue(owner);
        }
      },
    });
  }

  start(): void {
    this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  /** An orphan Pod: every ReplicaSet of its namespace that selects it may adopt it. */
  private enqueueMatching(p: PodLike): void {
    for (const rs of this.rs.cache.byIndex('namespace', p.metadata.namespace ?? '')) {
      if (selectorMatches(rs.spec?.selector, p.metadata.labels)) {
        this.controller.enqueue(objectKey(rs));
      }
    }
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const rs = this.rs.cache.get(key);
    if (!rs) return;
    if (!this.expectations.satisfied(key)) return;
    const { namespace } = splitKey(key);
    const uid = rs.metadata.uid;
    const selector = rs.spec?.selector;
    const client = this.ctx.kube.resource<PodLike>(Resources.pods, namespace);
    const deleting = rs.metadata.deletionTimestamp !== undefined;
    const owned: PodLike[] = [];
    for (const p of this.pods.cache.byIndex('namespace', namespace)) {
      const ref = controllerOf(p);
      const matches = selectorMatches(selector, p.metadata.labels);
      if (ref?.uid === uid) {
        if (matches || deleting) owned.push(p);
        else await this.release(client, p);
      } else if (!ref && matches && !deleting && p.metadata.deletionTimestamp === undefined) {
        const adopted = await this.adopt(client, rs, p);
        if (adopted) owned.push(adopted);
      }
    }
    const active = owned.filter(isPodActive);
    if (!deleting) await this.scale(key, rs, active, client);
    await this.writeStatus(rs, active);
    const minReady = rs.spec?.minReadySeconds ?? 0;
    // Pods that are ready but not yet available: look again when they will be.
    if (
      minReady > 0 &&
      active.some((p) => isPodReady(p) && !isPodAvailable(p, minReady, this.now()))
    ) {
      return { requeueAfterMs: 1000 };
    }
  }

  private async adopt(
    client: ReturnType<ControllerContext['kube']['resource']>,
    rs: ReplicaSetLike,
    p: PodLike,
  ): Promise<PodLike | undefined> {
    const refs = [
      ...(p.metadata.ownerReferences ?? []),
      ownerReference(rs, 'apps/v1', 'ReplicaSet'),
    ];
    return (await ignoreNotFound(
      client.patch(
        p.metadata.name ?? '',
        [
          { op: 'test', path: '/metadata/resourceVersion', value: p.metadata.resourceVersion },
          { op: 'add', path: '/metadata/ownerReferences', value: refs },
        ],
        'json',
      ),
    )) as PodLike | undefined;
  }

  private async release(
    client: ReturnType<ControllerContext['kube']['resource']>,
    p: PodLike,
  ): Promise<void> {
    const refs = (p.metadata.ownerReferences ?? []).filter(
      (r) => (r as { controller?: boolean }).controller !== true,
    );
    await ignoreNotFound(
      client.patch(
        p.metadata.name ?? '',
        [
          { op: 'test', path: '/metadata/resourceVersion', value: p.metadata.resourceVersion },
          { op: 'add', path: '/metadata/ownerReferences', value: refs },
        ],
        'json',
      ),
    );
  }

  private async scale(
    key: string,
    rs: ReplicaSetLike,
    active: PodLike[],
    client: ReturnType<ControllerContext['kube']['resource']>,
  ): Promise<void> {
    const want = rs.spec?.replicas ?? 1;
    const diff = want - active.length;
    if (diff > 0) {
      const n = Math.min(diff, BURST);
      this.expectations.expectAdds(key, n);
      const tmpl = rs.spec?.template ?? {};
      const body = {
        metadata: {
          generateName: `${rs.metadata.name}-`,
          labels: { ...(tmpl.metadata?.labels ?? {}) },
          ...(tmpl.metadata?.annotations ? { annotations: { ...tmpl.metadata.annotations } } : {}),
          ownerReferences: [ownerReference(rs, 'apps/v1', 'ReplicaSet')],
        },
        spec: structuredClone(tmpl.spec ?? {}),
      };
      const results = await Promise.allSettled(
        Array.from({ length: n }, () => client.create(structuredClone(body))),
      );
      let failed: unknown;
      for (const r of results) {
        if (r.status === 'rejected') {
          this.expectations.observedAdd(key);
          failed ??= r.reason;
        }
      }
      if (failed) throw failed;
    } else if (diff < 0) {
      const victims = rankForDeletion(active).slice(0, Math.min(-diff, BURST));
      for (const p of victims) this.expectations.expectDelete(key, objectKey(p));
      const results = await Promise.allSettled(
        victims.map((p) =>
          ignoreNotFound(
            client.delete(p.metadata.name ?? '', { preconditions: { uid: p.metadata.uid ?? '' } }),
          ),
        ),
      );
      let failed: unknown;
      results.forEach((r, i) => {
        if (r.status === 'rejected') {
          this.expectations.observedDelete(key, objectKey(victims[i] as PodLike));
          failed ??= r.reason;
        }
      });
      if (failed) throw failed;
    }
  }

  private async writeStatus(rs: ReplicaSetLike, active: PodLike[]): Promise<void> {
    const now = this.now();
    const minReady = rs.spec?.minReadySeconds ?? 0;
    const tmplLabels = rs.spec?.template?.metadata?.labels ?? {};
    const status = {
      ...(rs.status ?? {}),
      replicas: active.length,
      fullyLabeledReplicas: active.filter((p) =>
        Object.entries(tmplLabels).every(([k, v]) => p.metadata.labels?.[k] === v),
      ).length,
      readyReplicas: active.filter(isPodReady).length,
      availableReplicas: active.filter((p) => isPodAvailable(p, minReady, now)).length,
      observedGeneration: rs.metadata.generation ?? 0,
    };
    const cur = rs.status ?? {};
    if (
      cur.replicas === status.replicas &&
      cur.fullyLabeledReplicas === status.fullyLabeledReplicas &&
      cur.readyReplicas === status.readyReplicas &&
      cur.availableReplicas === status.availableReplicas &&
      cur.observedGeneration === status.observedGeneration
    ) {
      return;
    }
    const client = this.ctx.kube.resource<ReplicaSetLike>(
      Resources.replicaSets,
      rs.metadata.namespace,
    );
    await ignoreNotFound(client.updateStatus({ ...rs, status }));
  }
}
