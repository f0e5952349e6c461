/**
 * The Endpoints and EndpointSlice controller: for each Service with a selector, the Pods of
 * its namespace that the selector matches and that have an IP become one Endpoints object
 * (ready ones under `addresses`, the others under `notReadyAddresses`) and one
 * EndpointSlice named after the Service (label `kubernetes.io/service-name`, managed by
 * `endpointslice-controller.k8s.io`; one slice per Service, however many endpoints) with
 * each endpoint's ready / serving / terminating conditions, nodeName and targetRef.
 * Ports come from the Service's ports (a named targetPort is looked up in the first Pod's
 * container ports). Services without a selector are left alone (their Endpoints are the
 * user's). Both objects are owned by the Service (the garbage collector removes them).
 */
import { ignoreNotFound, ownerReference } from '../client/k8s/conflict.js';
import type { Informer } from '../client/k8s/informer.js';
import { selectorMatches } from '../client/k8s/selector.js';
import { type KubeObject, objectKey, Resources } from '../client/k8s/types.js';
import { type ControllerContext, isPodReady, type PodLike, splitKey } from './lib/context.js';
import { canonicalJson } from './lib/hash.js';
import { Controller, type ReconcileResult } from './runtime/controller.js';

interface ServicePort {
  name?: string;
  port: number;
  protocol?: string;
  targetPort?: number | string;
}

interface ServiceLike extends KubeObject {
  spec?: { selector?: Record<string, string>; ports?: ServicePort[]; type?: string };
}

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';

function targetPort(p: ServicePort, pod: PodLike | undefined): number {
  const t = p.targetPort ?? p.port;
  if (typeof t === 'number') return t;
  if (/^\d+$/.test(t)) return Number(t);
  for (const c of pod?.spec?.containers ?? []) {
    const hit = c.ports?.find((cp) => cp.name === t);
    if (hit) return hit.containerPort;
  }
  return p.port;
}

export class EndpointsController {
  readonly controller: Controller;
  private readonly services: Informer<ServiceLike>;
  private readonly pods: Informer<PodLike>;

  constructor(private readonly ctx: ControllerContext) {
    this.controller = new Controller('endpoints', (k) => this.reconcile(k), {
      ...(ctx.logger ? { logger: ctx.logger } : {}),
    });
    this.services = ctx.informers.for<ServiceLike>(Resources.services);
    this.pods = ctx.informers.for<PodLike>(Resources.pods);
    const svc = (o: KubeObject) => this.controller.enqueue(objectKey(o));
    this.services.addHandlers({ onAdd: svc, onUpdate: (_o, n) => svc(n), onDelete: svc });
    const pod = (p: PodLike, old?: PodLike) => {
      for (const s of this.services.cache.byIndex('namespace', p.metadata.namespace ?? '')) {
        const sel = s.spec?.selector;
        if (!sel) continue;
        const m = { matchLabels: sel };
        if (
          selectorMatches(m, p.metadata.labels) ||
          (old && selectorMatches(m, old.metadata.labels))
        )
          this.controller.enqueue(objectKey(s));
      }
    };
    this.pods.addHandlers({
      onAdd: (p) => pod(p),
      onUpdate: (o, n) => pod(n, o),
      onDelete: (p) => pod(p),
    });
  }

  start(): void {
    this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const s = this.services.cache.get(key);
    if (!s?.spec?.selector || s.metadata.deletionTimestamp) return;
    const { namespace, name } = splitKey(key);
    const sel = { matchLabels: s.spec.selector };
    const pods = this.pods.cache
      .byIndex('namespace', namespace)
      .filter(
        (p) =>
          selectorMatches(sel, p.metadata.labels) &&
          p.status?.podIP &&
          p.status.phase !== 'Failed' &&
          p.status.phase !== 'Succeeded',
      )
      .sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
    const ports = (s.spec.ports ?? []).map((p) => ({
      ...(p.name ? { name: p.name } : {}),
      port: targetPort(p, pods[0]),
      protocol: p.protocol ?? 'TCP',
    }));
    const ref = (p: PodLike) => ({
      kind: 'Pod',
      namespace,
      name: p.metadata.name ?? '',
      uid: p.metadata.uid ?? '',
    });
    const addr = (p: PodLike) => ({
      ip: p.status?.podIP as string,
      ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
      targetRef: ref(p),
    });
    const readyPods = pods.filter((p) => isPodReady(p) && !p.metadata.deletionTimestamp);
    const notReady = pods.filter((p) => !readyPods.includes(p));
    const subsets =
      pods.length === 0
        ? []
        : [
            {
              ...(readyPods.length ? { addresses: readyPods.map(addr) } : {}),
              ...(notReady.length ? { notReadyAddresses: notReady.map(addr) } : {}),
              ...(ports.length ? { ports } : {}),
            },
          ];
    const owner = [ownerReference(s, 'v1', 'Service')];
    await this.put(Resources.endpoints, namespace, name, {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: {
        name,
        namespace,
        labels: { ...(s.metadata.labels ?? {}) },
        ownerReferences: owner,
      },
      subsets,
    });
    await this.put(Resources.endpointSlices, namespace, name, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name,
        namespace,
        labels: {
          ...(s.metadata.labels ?? {}),
          [SERVICE_NAME_LABEL]: name,
          [MANAGED_BY]: 'endpointslice-controller.k8s.io',
        },
        ownerReferences: owner,
      },
      addressType: 'IPv4',
      endpoints: pods.map((p) => ({
        addresses: [p.status?.podIP as string],
        conditions: {
          ready: readyPods.includes(p),
          serving: isPodReady(p),
          terminating: p.metadata.deletionTimestamp !== undefined,
        },
        ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
        targetRef: ref(p),
      })),
      ports,
    });
  }

  /** Creates or replaces the object when its content differs. */
  private async put(
    ref: (typeof Resources)['endpoints'] | (typeof Resources)['endpointSlices'],
    namespace: string,
    name: string,
    want: KubeObject,
  ): Promise<void> {
    const client = this.ctx.kube.resource(ref, namespace);
    const cur = await ignoreNotFound(client.get(name));
    const body = (o: KubeObject) => {
      const { metadata, apiVersion: _a, kind: _k, ...rest } = o;
      return canonicalJson({ rest, labels: metadata.labels ?? {} });
    };
    // Created meanwhile by another worker: the 409 is retried, and then replaces it.
    if (!cur) {
      await client.create(want);
      return;
    }
    if (body(cur) === body(want)) return;
    await client.update({
      ...want,
      metadata: {
        ...cur.metadata,
        labels: want.metadata.labels,
        ownerReferences: want.metadata.ownerReferences,
      },
    });
  }
}
