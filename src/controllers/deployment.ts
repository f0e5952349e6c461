/**
 * The Deployment controller: one ReplicaSet per Pod template (named `<deployment>-<hash>`,
 * labelled and selected with `pod-template-hash`), rolled out by strategy:
 *
 * - RollingUpdate: the new ReplicaSet grows while the total stays ≤ replicas + maxSurge,
 *   old ones shrink while available Pods stay ≥ replicas − maxUnavailable (both default
 *   25%; surge rounds up, unavailable down; both 0 means 1 unavailable). Available counts
 *   are taken as min(status.availableReplicas, spec.replicas) per ReplicaSet, so a scale
 *   down the ReplicaSet controller has not reported yet is never counted twice.
 * - Recreate: old ReplicaSets go to 0, and the new one is scaled up only once no old Pod
 *   is left.
 *
 * Revisions: the new ReplicaSet gets `deployment.kubernetes.io/revision` = highest + 1
 * (also when `kubectl rollout undo` makes an old template current again), the Deployment
 * carries its new ReplicaSet's revision; old ReplicaSets scaled to 0 beyond
 * revisionHistoryLimit (default 10) are deleted, oldest first. A paused Deployment is only
 * scaled, never rolled. Status: replicas, updatedReplicas, readyReplicas,
 * availableReplicas, unavailableReplicas, observedGeneration, and the Available and
 * Progressing conditions with Kubernetes' reasons — what `kubectl rollout status` reads.
 * A rollout without progress (more updated, ready or available Pods, fewer old ones) for
 * progressDeadlineSeconds (default 600) gets Progressing False, ProgressDeadlineExceeded;
 * the Deployment is looked at again when its deadline would pass.
 */
import { controllerOf, ignoreNotFound, ownerReference } from '../client/k8s/conflict.js';
import type { Informer } from '../client/k8s/informer.js';
import { type LabelSelector, selectorMatches } from '../client/k8s/selector.js';
import { type KubeObject, objectKey, Resources } from '../client/k8s/types.js';
import {
  type ControllerContext,
  controllerKey,
  type PodLike,
  rfc3339,
  splitKey,
} from './lib/context.js';
import { canonicalJson, podTemplateHash, templateKey } from './lib/hash.js';
import type { ReplicaSetLike } from './replicaset.js';
import { Controller, type ReconcileResult } from './runtime/controller.js';

export const REVISION = 'deployment.kubernetes.io/revision';
export const DESIRED_REPLICAS = 'deployment.kubernetes.io/desired-replicas';
export const MAX_REPLICAS = 'deployment.kubernetes.io/max-replicas';
export const HASH_LABEL = 'pod-template-hash';

type IntOrString = number | string;

interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastUpdateTime: string;
  lastTransitionTime: string;
}

export interface DeploymentLike extends KubeObject {
  spec?: {
    replicas?: number;
    selector?: LabelSelector;
    template?: { metadata?: KubeObject['metadata']; spec?: Record<string, unknown> };
    strategy?: {
      type?: 'RollingUpdate' | 'Recreate';
      rollingUpdate?: { maxSurge?: IntOrString; maxUnavailable?: IntOrString };
    };
    minReadySeconds?: number;
    revisionHistoryLimit?: number;
    paused?: boolean;
    progressDeadlineSeconds?: number;
  };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    unavailableReplicas?: number;
    conditions?: Condition[];
    collisionCount?: number;
  };
}

/** A percentage of `total` (rounded up or down) or a plain number. */
export function scaledValue(v: IntOrString | undefined, total: number, roundUp: boolean): number {
  if (v === undefined) return Math.floor(total * 0.25 + (roundUp ? 0.75 - 1e-9 : 0));
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v);
  if (!m) return Number.parseInt(v, 10) || 0;
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

/** maxSurge and maxUnavailable of a RollingUpdate Deployment (Kubernetes' ResolveFenceposts). */
export function fenceposts(d: DeploymentLike): { surge: number; unavailable: number } {
  const replicas = d.spec?.replicas ?? 1;
  const ru = d.spec?.strategy?.rollingUpdate ?? {};
  const surge = scaledValue(ru.maxSurge ?? '25%', replicas, true);
  let unavailable = scaledValue(ru.maxUnavailable ?? '25%', replicas, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable };
}

function revisionOf(o: KubeObject): number {
  const n = Number(o.metadata.annotations?.[REVISION] ?? '0');
  return Number.isFinite(n) ? n : 0;
}

function withoutHash(template: unknown): unknown {
  const t = structuredClone(template ?? {}) as { metadata?: { labels?: Record<string, string> } };
  if (t.metadata?.labels) delete t.metadata.labels[HASH_LABEL];
  return t;
}

const specReplicas = (rs: ReplicaSetLike) => rs.spec?.replicas ?? 0;
const available = (rs: ReplicaSetLike) =>
  Math.min(rs.status?.availableReplicas ?? 0, specReplicas(rs));

export class DeploymentController {
  readonly controller: Controller;
  private readonly deployments: Informer<DeploymentLike>;
  private readonly rs: Informer<ReplicaSetLike>;
  private readonly pods: Informer<PodLike>;
  private readonly now: () => number;
  /** Deployment key → ms until its progress deadline is to be checked (set by writeStatus). */
  private readonly recheck = new Map<string, number>();

  constructor(private readonly ctx: ControllerContext) {
    this.now = ctx.now ?? Date.now;
    this.controller = new Controller('deployment', (k) => this.reconcile(k), {
      ...(ctx.logger ? { logger: ctx.logger } : {}),
    });
    this.deployments = ctx.informers.for<DeploymentLike>(Resources.deployments);
    this.rs = ctx.informers.for<ReplicaSetLike>(Resources.replicaSets);
    this.pods = ctx.informers.for<PodLike>(Resources.pods);
    const enqueue = (o: KubeObject) => this.controller.enqueue(objectKey(o));
    this.deployments.addHandlers({
      onAdd: enqueue,
      onUpdate: (_o, n) => enqueue(n),
      onDelete: enqueue,
    });
    const byOwner = (o: KubeObject) => {
      const k = controllerKey(o, 'Deployment');
      if (k) this.controller.enqueue(k);
    };
    this.rs.addHandlers({ onAdd: byOwner, onUpdate: (_o, n) => byOwner(n), onDelete: byOwner });
    // Recreate waits for old Pods to be gone: their deletion wakes the Deployment.
    this.pods.addHandlers({
      onDelete: (p) => {
        const rsKey = controllerKey(p, 'ReplicaSet');
        const rs = rsKey ? this.rs.cache.get(rsKey) : undefined;
        if (rs) byOwner(rs);
      },
    });
  }

  start(): void {
    this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const d = this.deployments.cache.get(key);
    if (!d || d.metadata.deletionTimestamp) return;
    const { namespace } = splitKey(key);
    const all = this.rs.cache
      .byIndex('namespace', namespace)
      .filter((rs) => controllerOf(rs)?.uid === d.metadata.uid);
    // Orphaned ReplicaSets the selector matches are adopted.
    for (const rs of this.rs.cache.byIndex('namespace', namespace)) {
      if (controllerOf(rs) || rs.metadata.deletionTimestamp) continue;
      if (!selectorMatches(d.spec?.selector, rs.metadata.labels)) continue;
      const adopted = await this.adopt(d, rs);
      if (adopted) all.push(adopted);
    }
    const want = templateKey(d.spec?.template ?? {});
    let newRS = all.find((rs) => templateKey(withoutHash(rs.spec?.template)) === want);
    const olds = all.filter((rs) => rs !== newRS);
    if (d.spec?.paused) {
      if (newRS) newRS = await this.syncRevision(d, newRS, olds, false);
      await this.writeStatus(d, newRS, all);
      return;
    }
    const recreate = d.spec?.strategy?.type === 'Recreate';
    if (recreate) await this.recreate(d, newRS, olds);
    else await this.rolling(d, newRS, olds);
    await this.cleanup(d);
    // A rollout in progress is looked at again when its progress deadline would pass.
    const ms = this.recheck.get(key);
    this.recheck.delete(key);
    return ms === undefined ? undefined : { requeueAfterMs: ms };
  }

  private client(namespace: string) {
    return this.ctx.kube.resource<ReplicaSetLike>(Resources.replicaSets, namespace);
  }

  private async adopt(d: DeploymentLike, rs: ReplicaSetLike): Promise<ReplicaSetLike | undefined> {
    const refs = [
      ...(rs.metadata.ownerReferences ?? []),
      ownerReference(d, 'apps/v1', 'Deployment'),
    ];
    return ignoreNotFound(
      this.client(rs.metadata.namespace ?? '').patch(
        rs.metadata.name ?? '',
        [
          { op: 'test', path: '/metadata/resourceVersion', value: rs.metadata.resourceVersion },
          { op: 'add', path: '/metadata/ownerReferences', value: refs },
        ],
        'json',
      ),
    );
  }

  private maxRevision(olds: ReplicaSetLike[]): number {
    return olds.reduce((m, rs) => Math.max(m, revisionOf(rs)), 0);
  }

  /** The new ReplicaSet, created when missing (with `replicas`), its revision brought up to date. */
  private async ensureNew(
    d: DeploymentLike,
    newRS: ReplicaSetLike | undefined,
    olds: ReplicaSetLike[],
    replicas: number,
  ): Promise<ReplicaSetLike> {
    if (newRS) return this.syncRevision(d, newRS, olds, true);
    const ns = d.metadata.namespace ?? '';
    const tmpl = structuredClone(d.spec?.template ?? {});
    const collisions = d.status?.collisionCount ?? 0;
    const hash = podTemplateHash(tmpl, collisions);
    tmpl.metadata = {
      ...(tmpl.metadata ?? {}),
      labels: { ...(tmpl.metadata?.labels ?? {}), [HASH_LABEL]: hash },
    };
    const selector: LabelSelector = structuredClone(d.spec?.selector ?? {});
    selector.matchLabels = { ...(selector.matchLabels ?? {}), [HASH_LABEL]: hash };
    const { surge } = fenceposts(d);
    const body = {
      metadata: {
        name: `${d.metadata.name}-${hash}`,
        labels: { ...(tmpl.metadata.labels ?? {}) },
        annotations: {
          ...this.copiedAnnotations(d),
          [REVISION]: String(this.maxRevision(olds) + 1),
          [DESIRED_REPLICAS]: String(d.spec?.replicas ?? 1),
          [MAX_REPLICAS]: String((d.spec?.replicas ?? 1) + surge),
        },
        ownerReferences: [ownerReference(d, 'apps/v1', 'Deployment')],
      },
      spec: {
        replicas,
        minReadySeconds: d.spec?.minReadySeconds ?? 0,
        selector,
        template: tmpl,
      },
    };
    try {
      return await this.client(ns).create(body);
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 409) {
        // A ReplicaSet of that name with another template: count a collision, try a new hash.
        const existing = await ignoreNotFound(this.client(ns).get(body.metadata.name));
        if (
          existing &&
          controllerOf(existing)?.uid === d.metadata.uid &&
          templateKey(withoutHash(existing.spec?.template)) === templateKey(d.spec?.template ?? {})
        ) {
          return existing;
        }
        await this.ctx.kube
          .resource<DeploymentLike>(Resources.deployments, ns)
          .updateStatus({ ...d, status: { ...(d.status ?? {}), collisionCount: collisions + 1 } });
      }
      throw e;
    }
  }

  private copiedAnnotations(d: DeploymentLike): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(d.metadata.annotations ?? {})) {
      if (k === REVISION || k === 'kubectl.kubernetes.io/last-applied-configuration') continue;
      if (k.startsWith('deployment.kubernetes.io/')) continue;
      out[k] = v;
    }
    return out;
  }

  /** An old template made current again (rollout undo) takes the next revision. */
  private async syncRevision(
    d: DeploymentLike,
    rs: ReplicaSetLike,
    olds: ReplicaSetLike[],
    allowed: boolean,
  ): Promise<ReplicaSetLike> {
    const max = this.maxRevision(olds);
    const rev = revisionOf(rs);
    const wanted = rev > max ? rev : max + 1;
    const desired = String(d.spec?.replicas ?? 1);
    const maxReplicas = String((d.spec?.replicas ?? 1) + fenceposts(d).surge);
    const a = rs.metadata.annotations ?? {};
    if (
      !allowed ||
      (a[REVISION] === String(wanted) &&
        a[DESIRED_REPLICAS] === desired &&
        a[MAX_REPLICAS] === maxReplicas)
    ) {
      return rs;
    }
    const annotations = {
      ...a,
      ...this.copiedAnnotations(d),
      [REVISION]: String(wanted),
      [DESIRED_REPLICAS]: desired,
      [MAX_REPLICAS]: maxReplicas,
    };
    return this.client(rs.metadata.namespace ?? '').update({
      ...rs,
      metadata: { ...rs.metadata, annotations },
    });
  }

  private async scaleRS(
    rs: ReplicaSetLike,
    replicas: number,
    d: DeploymentLike,
  ): Promise<ReplicaSetLike> {
    if (specReplicas(rs) === replicas) return rs;
    const annotations = {
      ...(rs.metadata.annotations ?? {}),
      [DESIRED_REPLICAS]: String(d.spec?.replicas ?? 1),
      [MAX_REPLICAS]: String((d.spec?.replicas ?? 1) + fenceposts(d).surge),
    };
    return this.client(rs.metadata.namespace ?? '').update({
      ...rs,
      metadata: { ...rs.metadata, annotations },
      spec: { ...(rs.spec ?? {}), replicas },
    });
  }

  private async rolling(
    d: DeploymentLike,
    newRS: ReplicaSetLike | undefined,
    olds: ReplicaSetLike[],
  ): Promise<void> {
    const replicas = d.spec?.replicas ?? 1;
    const { surge, unavailable } = fenceposts(d);
    const total = (list: ReplicaSetLike[]) => list.reduce((s, rs) => s + specReplicas(rs), 0);
    // New ReplicaSet: grow within the surge (or shrink to the target).
    const current = total(olds) + (newRS ? specReplicas(newRS) : 0);
    const newCount = newRS ? specReplicas(newRS) : 0;
    let target = newCount;
    if (newCount > replicas) target = replicas;
    else if (newCount < replicas) {
      const room = replicas + surge - current;
      target = room > 0 ? Math.min(newCount + room, replicas) : newCount;
    }
    newRS = await this.ensureNew(d, newRS, olds, target);
    if (specReplicas(newRS) !== target) newRS = await this.scaleRS(newRS, target, d);
    // Old ReplicaSets: shrink while enough Pods stay available.
    const active = olds.filter((rs) => specReplicas(rs) > 0);
    if (active.length > 0) {
      const all = [...olds, newRS];
      const minAvailable = replicas - unavailable;
      const newUnavailable = specReplicas(newRS) - available(newRS);
      let maxScaledDown = total(all) - minAvailable - newUnavailable;
      const byAge = [...active].sort((a, b) => revisionOf(a) - revisionOf(b));
      const shrunk = new Map<ReplicaSetLike, number>();
      // Unhealthy old Pods first: they cost no availability.
      for (const rs of byAge) {
        if (maxScaledDown <= 0) break;
        const unhealthy = specReplicas(rs) - available(rs);
        if (unhealthy <= 0) continue;
        const by = Math.min(unhealthy, maxScaledDown);
        shrunk.set(rs, specReplicas(rs) - by);
        maxScaledDown -= by;
      }
      const availableNow = all.reduce(
        (s, rs) => s + Math.min(available(rs), shrunk.get(rs) ?? specReplicas(rs)),
        0,
      );
      let room = availableNow - minAvailable;
      for (const rs of byAge) {
        if (room <= 0) break;
        const cur = shrunk.get(rs) ?? specReplicas(rs);
        const by = Math.min(cur, room);
        if (by <= 0) continue;
        shrunk.set(rs, cur - by);
        room -= by;
      }
      for (const [rs, n] of shrunk) await this.scaleRS(rs, n, d);
      for (const rs of olds) {
        const n = shrunk.get(rs);
        if (n !== undefined) (rs as { spec: { replicas: number } }).spec.replicas = n;
      }
    }
    await this.writeStatus(d, newRS, [...olds, newRS]);
  }

  private async recreate(
    d: DeploymentLike,
    newRS: ReplicaSetLike | undefined,
    olds: ReplicaSetLike[],
  ): Promise<void> {
    const replicas = d.spec?.replicas ?? 1;
    for (const rs of olds) if (specReplicas(rs) > 0) await this.scaleRS(rs, 0, d);
    const oldUids = new Set(olds.map((rs) => rs.metadata.uid));
    const oldPodsLeft = this.pods.cache
      .byIndex('namespace', d.metadata.namespace ?? '')
      .some((p) => oldUids.has(controllerOf(p)?.uid as string));
    const oldStatusLeft = olds.some((rs) => (rs.status?.replicas ?? 0) > 0);
    if (oldPodsLeft || oldStatusLeft) {
      if (newRS) newRS = await this.syncRevision(d, newRS, olds, true);
      await this.writeStatus(d, newRS, [...olds, ...(newRS ? [newRS] : [])]);
      return;
    }
    newRS = await this.ensureNew(d, newRS, olds, replicas);
    newRS = await this.scaleRS(newRS, replicas, d);
    await this.writeStatus(d, newRS, [...olds, newRS]);
  }

  /** Old ReplicaSets with nothing left, beyond revisionHistoryLimit, oldest first. */
  private async cleanup(d: DeploymentLike): Promise<void> {
    const limit = d.spec?.revisionHistoryLimit ?? 10;
    const ns = d.metadata.namespace ?? '';
    const all = this.rs.cache
      .byIndex('namespace', ns)
      .filter((rs) => controllerOf(rs)?.uid === d.metadata.uid);
    const want = templateKey(d.spec?.template ?? {});
    const idle = all
      .filter((rs) => templateKey(withoutHash(rs.spec?.template)) !== want)
      .filter(
        (rs) =>
          specReplicas(rs) === 0 &&
          (rs.status?.replicas ?? 0) === 0 &&
          !rs.metadata.deletionTimestamp,
      )
      .sort((a, b) => revisionOf(a) - revisionOf(b));
    for (const rs of idle.slice(0, Math.max(0, idle.length - limit))) {
      await ignoreNotFound(
        this.client(ns).delete(rs.metadata.name ?? '', {
          preconditions: { uid: rs.metadata.uid ?? '' },
        }),
      );
    }
  }

  private async writeStatus(
    d: DeploymentLike,
    newRS: ReplicaSetLike | undefined,
    all: ReplicaSetLike[],
  ): Promise<void> {
    const replicas = d.spec?.replicas ?? 1;
    const sum = (f: (rs: ReplicaSetLike) => number) => all.reduce((s, rs) => s + f(rs), 0);
    const statusReplicas = sum((rs) => rs.status?.replicas ?? 0);
    const updated = newRS?.status?.replicas ?? 0;
    const ready = sum((rs) => rs.status?.readyReplicas ?? 0);
    const avail = sum((rs) => rs.status?.availableReplicas ?? 0);
    const { unavailable } =
      d.spec?.strategy?.type === 'Recreate' ? { unavailable: 0 } : fenceposts(d);
    const now = rfc3339(this.now());
    const old = d.status?.conditions ?? [];
    const cond = (
      type: string,
      status: Condition['status'],
      reason: string,
      message: string,
    ): Condition => {
      const prev = old.find((c) => c.type === type);
      const same = prev && prev.status === status;
      return {
        type,
        status,
        reason,
        message,
        lastUpdateTime: prev && same && prev.reason === reason ? prev.lastUpdateTime : now,
        lastTransitionTime: same ? prev.lastTransitionTime : now,
      };
    };
    const availableCond =
      avail >= replicas - unavailable
        ? cond(
            'Available',
            'True',
            'MinimumReplicasAvailable',
            'Deployment has minimum availability.',
          )
        : cond(
            'Available',
            'False',
            'MinimumReplicasUnavailable',
            'Deployment does not have minimum availability.',
          );
    const rsName = newRS?.metadata.name ?? '';
    const complete =
      newRS !== undefined &&
      updated === replicas &&
      statusReplicas === replicas &&
      avail >= replicas;
    let progressing: Condition;
    if (d.spec?.paused) {
      progressing = cond('Progressing', 'Unknown', 'DeploymentPaused', 'Deployment is paused');
    } else if (complete) {
      progressing = cond(
        'Progressing',
        'True',
        'NewReplicaSetAvailable',
        `ReplicaSet "${rsName}" has successfully progressed.`,
      );
    } else if (newRS) {
      const prev = old.find((c) => c.type === 'Progressing');
      const was = d.status ?? {};
      // Progress, as Kubernetes counts it: more updated, ready or available Pods, or fewer
      // old ones. It renews the Progressing condition's lastUpdateTime.
      const progressed =
        updated > (was.updatedReplicas ?? 0) ||
        ready > (was.readyReplicas ?? 0) ||
        avail > (was.availableReplicas ?? 0) ||
        statusReplicas - updated < (was.replicas ?? 0) - (was.updatedReplicas ?? 0);
      const deadlineMs = (d.spec?.progressDeadlineSeconds ?? 600) * 1000;
      const since = prev ? Date.parse(prev.lastUpdateTime ?? '') : Number.NaN;
      const timedOut =
        prev?.reason === 'ProgressDeadlineExceeded' ||
        (!progressed && Number.isFinite(since) && this.now() - since > deadlineMs);
      if (timedOut && !progressed) {
        progressing = cond(
          'Progressing',
          'False',
          'ProgressDeadlineExceeded',
          `ReplicaSet "${rsName}" has timed out progressing.`,
        );
      } else {
        const reason =
          prev?.reason === 'NewReplicaSetCreated' && prev.message.includes(rsName) && !progressed
            ? 'NewReplicaSetCreated'
            : 'ReplicaSetUpdated';
        progressing = cond('Progressing', 'True', reason, `ReplicaSet "${rsName}" is progressing.`);
        if (progressed) progressing.lastUpdateTime = now;
        const from = progressed ? this.now() : Number.isFinite(since) ? since : this.now();
        // One second past the deadline: lastUpdateTime has second precision.
        this.recheck.set(objectKey(d), Math.max(0, from + deadlineMs - this.now()) + 1000);
      }
    } else {
      progressing = cond('Progressing', 'True', 'NewReplicaSetCreated', 'Created new replica set');
    }
    const status: NonNullable<DeploymentLike['status']> = {
      ...(d.status ?? {}),
      observedGeneration: d.metadata.generation ?? 0,
      replicas: statusReplicas,
      updatedReplicas: updated,
      readyReplicas: ready,
      availableReplicas: avail,
      unavailableReplicas: Math.max(0, replicas - avail),
      conditions: [availableCond, progressing],
    };
    const ns = d.metadata.namespace ?? '';
    const client = this.ctx.kube.resource<DeploymentLike>(Resources.deployments, ns);
    // The Deployment carries its new ReplicaSet's revision.
    const rev = newRS?.metadata.annotations?.[REVISION];
    let cur = d;
    if (rev && d.metadata.annotations?.[REVISION] !== rev) {
      cur = await client.update({
        ...d,
        metadata: {
          ...d.metadata,
          annotations: { ...(d.metadata.annotations ?? {}), [REVISION]: rev },
        },
      });
    }
    if (canonicalJson(cur.status ?? {}) === canonicalJson(status)) return;
    await ignoreNotFound(client.updateStatus({ ...cur, status }));
  }
}
