/**
 * The node lifecycle controller:
 *
 * - a Node whose Lease in `kube-node-lease` was not renewed for `gracePeriodMs` (default
 *   40 s, the kube-controller-manager's node-monitor-grace-period) gets Ready=Unknown
 *   (NodeStatusUnknown) and the `node.kubernetes.io/unreachable` taints, NoSchedule and
 *   NoExecute (with timeAdded); once its Lease is renewed again the taints go;
 * - the Pods on a node with a NoExecute taint (the unreachable one or any other, say from
 *   `kubectl taint node n key=value:NoExecute`) are evicted (deleted) at once when they do
 *   not tolerate one of them, else after the smallest tolerationSeconds of the tolerations
 *   that match, or never when every taint is tolerated without tolerationSeconds (as
 *   Kubernetes' taint eviction does); a taint's time is its timeAdded, or when this
 *   controller first saw it;
 * - Pods bound to a Node that no longer exists are deleted with gracePeriodSeconds=0
 *   (nothing is left to end them), as the Pod garbage collector does.
 *
 * Pods get no default tolerations here (Kubernetes adds 300 s ones by admission).
 */
import { ignoreNotFound } from '../client/k8s/conflict.js';
import type { Informer } from '../client/k8s/informer.js';
import { type KubeObject, objectKey, Resources } from '../client/k8s/types.js';
import { type ControllerContext, type PodLike, rfc3339 } from './lib/context.js';
import { Controller, type ReconcileResult } from './runtime/controller.js';

export const UNREACHABLE = 'node.kubernetes.io/unreachable';
const NODE_LEASE_NS = 'kube-node-lease';

interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  timeAdded?: string;
}

interface NodeLike extends KubeObject {
  spec?: { taints?: Taint[]; [k: string]: unknown };
  status?: {
    conditions?: { type: string; status: string; [k: string]: unknown }[];
    [k: string]: unknown;
  };
}

interface LeaseLike extends KubeObject {
  spec?: { renewTime?: string; leaseDurationSeconds?: number; holderIdentity?: string };
}

export interface NodeLifecycleOptions {
  gracePeriodMs?: number;
}

type Toleration = NonNullable<NonNullable<PodLike['spec']>['tolerations']>[number];

function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return t.key === undefined || t.key === '' || t.key === taint.key;
  return t.key === taint.key;
}

/** ms after the taint was added at which the Pod is evicted; Infinity: never. */
export function evictionDelayMs(pod: PodLike, taint: Taint): number {
  let best = 0;
  let tolerated = false;
  for (const t of pod.spec?.tolerations ?? []) {
    if (!tolerates(t, taint)) continue;
    tolerated = true;
    if (t.tolerationSeconds === undefined || t.tolerationSeconds === null)
      return Number.POSITIVE_INFINITY;
    best = Math.max(best, Math.max(0, t.tolerationSeconds) * 1000);
  }
  return tolerated ? best : 0;
}

/** The NoExecute taints of a Node, as one comparable string. */
function noExecuteSignature(n: NodeLike): string {
  return JSON.stringify(
    (n.spec?.taints ?? [])
      .filter((t) => t.effect === 'NoExecute')
      .map((t) => [t.key, t.value ?? '', t.timeAdded ?? '']),
  );
}

export class NodeLifecycleController {
  readonly controller: Controller;
  private readonly nodes: Informer<NodeLike>;
  private readonly leases: Informer<LeaseLike>;
  private readonly pods: Informer<PodLike>;
  private readonly now: () => number;
  private readonly graceMs: number;
  /** NoExecute taints without timeAdded (node, key, value) → first seen, ms. */
  private readonly firstSeen = new Map<string, number>();

  constructor(
    private readonly ctx: ControllerContext,
    o: NodeLifecycleOptions = {},
  ) {
    this.now = ctx.now ?? Date.now;
    this.graceMs = o.gracePeriodMs ?? 40_000;
    this.controller = new Controller('nodelifecycle', (k) => this.reconcile(k), {
      ...(ctx.logger ? { logger: ctx.logger } : {}),
    });
    this.nodes = ctx.informers.for<NodeLike>(Resources.nodes);
    this.leases = ctx.informers.for<LeaseLike>(Resources.leases);
    this.pods = ctx.informers.for<PodLike>(Resources.pods);
    const node = (o: KubeObject) => this.controller.enqueue(`node/${o.metadata.name}`);
    const podsOn = (name: string | undefined) => {
      for (const p of this.pods.list())
        if (p.spec?.nodeName === name) this.controller.enqueue(`pod/${objectKey(p)}`);
    };
    this.nodes.addHandlers({
      onAdd: node,
      onUpdate: (o, n) => {
        node(n);
        if (noExecuteSignature(o) !== noExecuteSignature(n)) {
          this.forgetTaints(n);
          podsOn(n.metadata.name);
        }
      },
      onDelete: (n) => {
        this.forgetTaints({ metadata: { name: n.metadata.name } });
        podsOn(n.metadata.name);
      },
    });
    this.leases.addHandlers({
      onAdd: (l) => l.metadata.namespace === NODE_LEASE_NS && node(l),
      onUpdate: (_o, l) => l.metadata.namespace === NODE_LEASE_NS && node(l),
    });
    this.pods.addHandlers({
      onAdd: (p) => this.controller.enqueue(`pod/${objectKey(p)}`),
      onUpdate: (o, p) => {
        if (o.spec?.nodeName !== p.spec?.nodeName || o.spec?.tolerations !== p.spec?.tolerations)
          this.controller.enqueue(`pod/${objectKey(p)}`);
      },
    });
  }

  /** When a NoExecute taint was added: its timeAdded, else when this controller first saw it. */
  private taintTime(nodeName: string, taint: Taint): number {
    const added = taint.timeAdded ? Date.parse(taint.timeAdded) : Number.NaN;
    if (!Number.isNaN(added)) return added;
    const key = `${nodeName}\0${taint.key}\0${taint.value ?? ''}`;
    let seen = this.firstSeen.get(key);
    if (seen === undefined) {
      seen = this.now();
      this.firstSeen.set(key, seen);
    }
    return seen;
  }

  /** Drops the first-seen times of a Node's taints that it no longer has. */
  private forgetTaints(n: NodeLike): void {
    const prefix = `${n.metadata.name}\0`;
    const keep = new Set((n.spec?.taints ?? []).map((t) => `${prefix}${t.key}\0${t.value ?? ''}`));
    for (const k of this.firstSeen.keys())
      if (k.startsWith(prefix) && !keep.has(k)) this.firstSeen.delete(k);
  }

  start(): void {
    this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    if (key.startsWith('node/')) return this.reconcileNode(key.slice(5));
    return this.reconcilePod(key.slice(4));
  }

  private lastRenew(name: string, node: NodeLike): number | undefined {
    const lease = this.leases.cache.getByName(NODE_LEASE_NS, name);
    const t = lease?.spec?.renewTime;
    if (t) return Date.parse(t);
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    const hb = ready?.lastHeartbeatTime;
    return typeof hb === 'string' ? Date.parse(hb) : undefined;
  }

  private async reconcileNode(name: string): Promise<ReconcileResult> {
    const node = this.nodes.cache.get(name);
    if (!node) return;
    const renewed = this.lastRenew(name, node);
    // A node that never heartbeat is given one grace period from its creation.
    const created = Date.parse(node.metadata.creationTimestamp ?? '');
    const since = renewed ?? (Number.isNaN(created) ? this.now() : created);
    const age = this.now() - since;
    const taints = node.spec?.taints ?? [];
    const tainted = taints.some((t) => t.key === UNREACHABLE);
    const client = this.ctx.kube.resource<NodeLike>(Resources.nodes);
    if (age > this.graceMs) {
      if (!tainted) {
        const added = rfc3339(this.now());
        await client.patch(
          name,
          [
            { op: 'test', path: '/metadata/resourceVersion', value: node.metadata.resourceVersion },
            {
              op: 'add',
              path: '/spec/taints',
              value: [
                ...taints,
                { key: UNREACHABLE, effect: 'NoSchedule', timeAdded: added },
                { key: UNREACHABLE, effect: 'NoExecute', timeAdded: added },
              ],
            },
          ],
          'json',
        );
      }
      const conditions = (node.status?.conditions ?? []).map((c) =>
        c.type === 'Ready' && c.status !== 'Unknown'
          ? {
              ...c,
              status: 'Unknown',
              reason: 'NodeStatusUnknown',
              message: 'Kubelet stopped posting node status.',
              lastTransitionTime: rfc3339(this.now()),
            }
          : c,
      );
      if (conditions.some((c, i) => c !== node.status?.conditions?.[i])) {
        await client.patch(name, { status: { conditions } }, 'merge', { subresource: 'status' });
      }
      for (const p of this.pods.list())
        if (p.spec?.nodeName === name) this.controller.enqueue(`pod/${objectKey(p)}`);
      return;
    }
    if (tainted) {
      await client.patch(
        name,
        [
          { op: 'test', path: '/metadata/resourceVersion', value: node.metadata.resourceVersion },
          { op: 'add', path: '/spec/taints', value: taints.filter((t) => t.key !== UNREACHABLE) },
        ],
        'json',
      );
    }
    return { requeueAfterMs: this.graceMs - age + 10 };
  }

  private async reconcilePod(key: string): Promise<ReconcileResult> {
    const pod = this.pods.cache.get(key);
    const nodeName = pod?.spec?.nodeName;
    if (!pod || !nodeName) return;
    const client = this.ctx.kube.resource<PodLike>(Resources.pods, pod.metadata.namespace);
    const node = this.nodes.cache.get(nodeName);
    if (!node) {
      if (!this.nodes.hasSynced()) return { requeueAfterMs: 1000 };
      // Confirm: the cache may not have seen a Node created just now.
      const fresh = await ignoreNotFound(this.ctx.kube.resource(Resources.nodes).get(nodeName));
      if (fresh) return;
      await ignoreNotFound(
        client.delete(pod.metadata.name ?? '', {
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid ?? '' },
        }),
      );
      return;
    }
    if (pod.metadata.deletionTimestamp) return;
    const taints = (node.spec?.taints ?? []).filter((t) => t.effect === 'NoExecute');
    if (taints.length === 0) return;
    let evictAt = Number.POSITIVE_INFINITY;
    for (const taint of taints) {
      const delay = evictionDelayMs(pod, taint);
      if (delay === Number.POSITIVE_INFINITY) continue;
      evictAt = Math.min(evictAt, this.taintTime(nodeName, taint) + delay);
    }
    if (evictAt === Number.POSITIVE_INFINITY) return;
    const left = evictAt - this.now();
    if (left > 0) return { requeueAfterMs: left };
    await ignoreNotFound(
      client.delete(pod.metadata.name ?? '', { preconditions: { uid: pod.metadata.uid ?? '' } }),
    );
  }
}
