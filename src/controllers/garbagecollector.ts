/**
 * The garbage collector: ownerReferences across the kinds it watches (GC_RESOURCES).
 *
 * - An object all of whose owners are gone (not in the informers' caches, and confirmed by
 *   a GET that answers 404 or another uid) is deleted (background cascading: its own
 *   dependants follow the same way). References to gone owners beside live ones are
 *   removed.
 * - An owner being deleted with the `foregroundDeletion` finalizer: its dependants are
 *   deleted (foreground when they have dependants of their own), and the finalizer is
 *   removed once no dependant with blockOwnerDeletion=true is left.
 * - An owner being deleted with the `orphan` finalizer: the references to it are removed
 *   from its dependants, then the finalizer.
 *
 * Kinds outside GC_RESOURCES (custom resources) are neither collected nor counted as
 * owners. Namespace deletion needs nothing here: the API server empties the namespace.
 */
import { ignoreNotFound, type OwnerReference, ownerReferences } from '../client/k8s/conflict.js';
import type { Informer } from '../client/k8s/informer.js';
import { type KubeObject, objectKey, type ResourceRef, Resources } from '../client/k8s/types.js';
import { type ControllerContext, splitKey } from './lib/context.js';
import { Controller, type ReconcileResult } from './runtime/controller.js';

export const FOREGROUND = 'foregroundDeletion';
export const ORPHAN = 'orphan';

/** Kind → resource, for the kinds collected and looked up as owners. */
export const GC_RESOURCES: ReadonlyMap<string, ResourceRef> = new Map<string, ResourceRef>([
  ['Deployment', Resources.deployments],
  ['ReplicaSet', Resources.replicaSets],
  ['StatefulSet', Resources.statefulSets],
  ['DaemonSet', Resources.daemonSets],
  ['Pod', Resources.pods],
  ['Service', Resources.services],
  ['Endpoints', Resources.endpoints],
  ['EndpointSlice', Resources.endpointSlices],
  ['ConfigMap', Resources.configMaps],
  ['Secret', Resources.secrets],
  ['Node', Resources.nodes],
  ['Lease', Resources.leases],
]);

/** Adds a kind (EndpointSlice, say) before the collector is made. */
export function collectKind(kind: string, ref: ResourceRef, into = GC_RESOURCES): void {
  (into as Map<string, ResourceRef>).set(kind, ref);
}

interface Item {
  kind: string;
  key: string;
}

const itemKey = (kind: string, key: string) => `${kind}|${key}`;
function parseItem(k: string): Item {
  const i = k.indexOf('|');
  return { kind: k.slice(0, i), key: k.slice(i + 1) };
}

export class GarbageCollector {
  readonly controller: Controller;
  private readonly informers = new Map<string, Informer<KubeObject>>();
  /** uid → item key of every cached object. */
  private readonly byUid = new Map<string, string>();
  /** owner uid → item keys of its dependants. */
  private readonly dependants = new Map<string, Set<string>>();

  constructor(
    private readonly ctx: ControllerContext,
    kinds: ReadonlyMap<string, ResourceRef> = GC_RESOURCES,
  ) {
    this.controller = new Controller('garbagecollector', (k) => this.reconcile(k), {
      workers: 4,
      ...(ctx.logger ? { logger: ctx.logger } : {}),
    });
    for (const [kind, ref] of kinds) {
      const inf = ctx.informers.for<KubeObject>(ref);
      this.informers.set(kind, inf);
      inf.addHandlers({
        onAdd: (o) => this.observe(kind, undefined, o),
        onUpdate: (old, o) => this.observe(kind, old, o),
        onDelete: (o) => this.gone(kind, o),
      });
    }
  }

  start(): void {
    this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private index(key: string, o: KubeObject, add: boolean): void {
    for (const r of ownerReferences(o)) {
      let set = this.dependants.get(r.uid);
      if (!set) {
        if (!add) continue;
        this.dependants.set(r.uid, (set = new Set()));
      }
      if (add) set.add(key);
      else {
        set.delete(key);
        if (set.size === 0) this.dependants.delete(r.uid);
      }
    }
  }

  private observe(kind: string, old: KubeObject | undefined, o: KubeObject): void {
    const key = itemKey(kind, objectKey(o));
    if (old) this.index(key, old, false);
    this.index(key, o, true);
    if (o.metadata.uid) this.byUid.set(o.metadata.uid, key);
    const f = o.metadata.finalizers ?? [];
    if (
      ownerReferences(o).length > 0 ||
      (o.metadata.deletionTimestamp && (f.includes(FOREGROUND) || f.includes(ORPHAN)))
    ) {
      this.controller.enqueue(key);
    }
    // A dependant that changed may unblock an owner waiting in foreground deletion.
    this.enqueueDeletingOwners(o);
  }

  private gone(kind: string, o: KubeObject): void {
    const key = itemKey(kind, objectKey(o));
    this.index(key, o, false);
    if (o.metadata.uid && this.byUid.get(o.metadata.uid) === key) this.byUid.delete(o.metadata.uid);
    for (const d of this.dependants.get(o.metadata.uid ?? '') ?? []) this.controller.enqueue(d);
    this.enqueueDeletingOwners(o);
  }

  private enqueueDeletingOwners(o: KubeObject): void {
    for (const r of ownerReferences(o)) {
      const ok = this.byUid.get(r.uid);
      if (ok) this.controller.enqueue(ok);
    }
  }

  private cached(item: Item): KubeObject | undefined {
    return this.informers.get(item.kind)?.cache.get(item.key);
  }

  private client(kind: string, namespace: string | undefined) {
    const ref = GC_RESOURCES.get(kind) as ResourceRef;
    return this.ctx.kube.resource(ref, ref.namespaced ? namespace : undefined);
  }

  /** Whether the owner a reference names exists (with that uid). Unknown kinds count as present. */
  private async ownerExists(r: OwnerReference, namespace: string | undefined): Promise<boolean> {
    const ref = GC_RESOURCES.get(r.kind);
    if (!ref || !this.informers.has(r.kind)) return true;
    if (this.byUid.has(r.uid)) return true;
    const cur = await ignoreNotFound(this.client(r.kind, namespace).get(r.name));
    return cur !== undefined && cur.metadata.uid === r.uid;
  }

  async reconcile(k: string): Promise<ReconcileResult> {
    const item = parseItem(k);
    const obj = this.cached(item);
    if (!obj) return;
    const { namespace } = splitKey(item.key);
    const ns = namespace === '' ? undefined : namespace;
    const finalizers = obj.metadata.finalizers ?? [];
    if (obj.metadata.deletionTimestamp && finalizers.includes(ORPHAN)) {
      await this.orphanDependants(obj);
      await this.removeFinalizer(item, obj, ORPHAN);
      return;
    }
    if (obj.metadata.deletionTimestamp && finalizers.includes(FOREGROUND)) {
      await this.foreground(item, obj);
      return;
    }
    const refs = ownerReferences(obj);
    if (refs.length === 0) return;
    const present: OwnerReference[] = [];
    for (const r of refs) if (await this.ownerExists(r, ns)) present.push(r);
    if (present.length === refs.length) return;
    const client = this.client(item.kind, ns);
    if (present.length === 0) {
      if (obj.metadata.deletionTimestamp) return;
      const policy = this.hasDependants(obj) ? 'Foreground' : 'Background';
      await ignoreNotFound(
        client.delete(obj.metadata.name ?? '', {
          propagationPolicy: policy,
          preconditions: { uid: obj.metadata.uid ?? '' },
        }),
      );
      return;
    }
    await ignoreNotFound(
      client.patch(
        obj.metadata.name ?? '',
        [
          { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
          { op: 'replace', path: '/metadata/ownerReferences', value: present },
        ],
        'json',
      ),
    );
  }

  private hasDependants(o: KubeObject): boolean {
    return (this.dependants.get(o.metadata.uid ?? '')?.size ?? 0) > 0;
  }

  private dependantsOf(o: KubeObject): { item: Item; obj: KubeObject }[] {
    const out: { item: Item; obj: KubeObject }[] = [];
    for (const d of this.dependants.get(o.metadata.uid ?? '') ?? []) {
      const item = parseItem(d);
      const obj = this.cached(item);
      if (obj) out.push({ item, obj });
    }
    return out;
  }

  private async foreground(item: Item, owner: KubeObject): Promise<void> {
    const uid = owner.metadata.uid ?? '';
    let blocking = 0;
    for (const { item: di, obj: d } of this.dependantsOf(owner)) {
      const ref = ownerReferences(d).find((r) => r.uid === uid);
      if (ref?.blockOwnerDeletion) blocking++;
      if (d.metadata.deletionTimestamp) continue;
      const policy = this.hasDependants(d) ? 'Foreground' : 'Background';
      await ignoreNotFound(
        this.client(di.kind, d.metadata.namespace).delete(d.metadata.name ?? '', {
          propagationPolicy: policy,
          preconditions: { uid: d.metadata.uid ?? '' },
        }),
      );
    }
    if (blocking === 0) await this.removeFinalizer(item, owner, FOREGROUND);
  }

  private async orphanDependants(owner: KubeObject): Promise<void> {
    const uid = owner.metadata.uid ?? '';
    for (const { item, obj } of this.dependantsOf(owner)) {
      const kept = ownerReferences(obj).filter((r) => r.uid !== uid);
      await ignoreNotFound(
        this.client(item.kind, obj.metadata.namespace).patch(
          obj.metadata.name ?? '',
          [
            { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
            { op: 'replace', path: '/metadata/ownerReferences', value: kept },
          ],
          'json',
        ),
      );
    }
  }

  private async removeFinalizer(item: Item, obj: KubeObject, finalizer: string): Promise<void> {
    const kept = (obj.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    await ignoreNotFound(
      this.client(item.kind, obj.metadata.namespace).patch(
        obj.metadata.name ?? '',
        [
          { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
          { op: 'replace', path: '/metadata/finalizers', value: kept },
        ],
        'json',
      ),
    );
  }
}
