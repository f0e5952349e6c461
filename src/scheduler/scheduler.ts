/**
 * The scheduler: a client of the Kubernetes API that places pods on nodes.
 *
 * Informers feed it: pods without spec.nodeName (field selector `spec.nodeName=`) go into
 * the queue; bound pods and nodes go into the cache; namespaces give labels for
 * namespaceSelector. One loop pops a pod, runs the framework on the cache's view
 * synchronously, and then either
 *   - assumes the pod onto the chosen node in the cache (so the next pod sees it at once)
 *     and binds it through `POST pods/NAME/binding` in the background; a failed binding
 *     takes the assumption back and retries the pod after backoff; or
 *   - records the failure as kube-scheduler does: the PodScheduled=False condition with
 *     reason Unschedulable and the FitError text, and a Warning FailedScheduling Event
 *     (repeats of the same message bump the Event's count), and parks the pod until a node
 *     is added or changes or a bound pod goes away.
 * Only pods whose spec.schedulerName is this scheduler's (default `default-scheduler`) are
 * taken. It yields to the event loop after every pod, so informer events keep flowing.
 */
import { isDeepStrictEqual } from 'node:util';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import {
  type Informer,
  isKubeApiError,
  type KubeClient,
  type KubeObject,
  objectKey,
  Resources,
} from '../client/k8s/index.js';
import { SchedulerCache } from './cache.js';
import { type Decision, Framework } from './framework.js';
import { type QueuedPod, SchedulingQueue } from './queue.js';
import type { Node, Pod } from './types.js';

export interface SchedulerOptions {
  /** Seed of the tie-breaking generator (`--scheduler-seed`). Default: random. */
  seed?: number;
  /** Pods with this spec.schedulerName (or none) are ours. Default `default-scheduler`. */
  schedulerName?: string;
  /** Share of nodes to find feasible before scoring; absent: kube-scheduler's adaptive rule. */
  percentageOfNodesToScore?: number;
  /** Retry backoff, doubling: default 1 s to 10 s, as kube-scheduler. */
  backoff?: { initialMs: number; maxMs: number };
  /** An unschedulable pod is retried at the latest after this long. Default 5 min. */
  maxUnschedulableMs?: number;
  /** Bindings in flight at once. Default 32. */
  maxConcurrentBinds?: number;
  /** Write Scheduled / FailedScheduling Events (default true). */
  events?: boolean;
  /** Failures the scheduler recovers from (an informer, a binding, a status write). */
  onError?(err: unknown): void;
}

export interface SchedulerStats {
  attempts: number;
  scheduled: number;
  unschedulable: number;
  bindFailures: number;
}

type Rec = Record<string, unknown>;

/** A change that may let the pod fit elsewhere: not its status, not bookkeeping. */
function relevantChange(a: Pod, b: Pod): boolean {
  return (
    !isDeepStrictEqual(a.spec, b.spec) ||
    !isDeepStrictEqual(a.metadata.labels, b.metadata.labels) ||
    !isDeepStrictEqual(a.metadata.annotations, b.metadata.annotations)
  );
}

function rfc3339(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

function microTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}000Z`;
}

export class Scheduler {
  readonly cache = new SchedulerCache();
  readonly queue: SchedulingQueue;
  readonly stats: SchedulerStats = { attempts: 0, scheduled: 0, unschedulable: 0, bindFailures: 0 };
  readonly schedulerName: string;
  private readonly framework: Framework;
  private readonly pending: Informer<Pod>;
  private readonly bound: Informer<Pod>;
  private readonly nodes: Informer<Node>;
  private readonly namespaces: Informer<KubeObject>;
  private readonly maxBinds: number;
  private bindsInFlight = 0;
  private bindSlotWaiters: (() => void)[] = [];
  private readonly inflightBinds = new Set<Promise<void>>();
  private readonly lastEvent = new Map<string, { name: string; message: string; count: number }>();
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly kube: KubeClient,
    private readonly options: SchedulerOptions = {},
  ) {
    this.schedulerName = options.schedulerName ?? 'default-scheduler';
    const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
    this.framework = new Framework(xoroshiro128plus(seed), {
      ...(options.percentageOfNodesToScore !== undefined
        ? { percentageOfNodesToScore: options.percentageOfNodesToScore }
        : {}),
    });
    this.queue = new SchedulingQueue({
      ...(options.backoff
        ? { initialBackoffMs: options.backoff.initialMs, maxBackoffMs: options.backoff.maxMs }
        : {}),
      ...(options.maxUnschedulableMs !== undefined
        ? { maxUnschedulableMs: options.maxUnschedulableMs }
        : {}),
    });
    this.maxBinds = options.maxConcurrentBinds ?? 32;
    const onError = (e: unknown) => this.report(e);
    const notTerminated = 'status.phase!=Succeeded,status.phase!=Failed';
    this.pending = kube.informer(kube.resource<Pod>(Resources.pods), {
      fieldSelector: `spec.nodeName=,${notTerminated}`,
      onError,
    });
    this.bound = kube.informer(kube.resource<Pod>(Resources.pods), {
      fieldSelector: `spec.nodeName!=,${notTerminated}`,
      onError,
    });
    this.nodes = kube.informer(kube.resource<Node>(Resources.nodes), { onError });
    this.namespaces = kube.informer(kube.resource(Resources.namespaces), { onError });
    this.wire();
  }

  private ours(p: Pod): boolean {
    const name = p.spec?.schedulerName;
    return (name === undefined || name === '' || name === this.schedulerName) && !p.spec?.nodeName;
  }

  private wire(): void {
    this.pending.addHandlers({
      onAdd: (p) => {
        if (this.ours(p) && !this.cache.isAssumed(p) && !p.metadata.deletionTimestamp) {
          this.queue.add(p);
        }
      },
      onUpdate: (old, p) => {
        if (p.metadata.deletionTimestamp || !this.ours(p)) {
          this.queue.delete(p);
          return;
        }
        if (this.cache.isAssumed(p)) return;
        if (this.queue.has(p)) this.queue.update(p, relevantChange(old, p));
        else this.queue.add(p);
      },
      onDelete: (p) => {
        this.queue.delete(p);
        this.lastEvent.delete(`${objectKey(p)}\u0000FailedScheduling`);
        // A pod deleted before its binding landed: the binding fails and forgets it.
      },
    });
    this.bound.addHandlers({
      onAdd: (p) => {
        this.cache.upsertPod(p);
        this.queue.delete(p);
      },
      onUpdate: (old, p) => {
        this.cache.upsertPod(p);
        // New labels may satisfy (or stop violating) other pods' affinity and spread.
        if (!isDeepStrictEqual(old.metadata.labels, p.metadata.labels))
          this.queue.moveAllToActive();
      },
      onDelete: (p) => {
        this.cache.removePod(p);
        this.queue.moveAllToActive();
      },
    });
    this.nodes.addHandlers({
      onAdd: (n) => {
        this.cache.upsertNode(n);
        this.queue.moveAllToActive();
      },
      onUpdate: (old, n) => {
        this.cache.upsertNode(n);
        if (
          !isDeepStrictEqual(old.spec, n.spec) ||
          !isDeepStrictEqual(old.metadata.labels, n.metadata.labels) ||
          !isDeepStrictEqual(old.status?.allocatable, n.status?.allocatable) ||
          !isDeepStrictEqual(
            old.status?.conditions?.find((c) => c.type === 'Ready')?.status,
            n.status?.conditions?.find((c) => c.type === 'Ready')?.status,
          )
        ) {
          this.queue.moveAllToActive();
        }
      },
      onDelete: (n) => this.cache.removeNode(n.metadata.name ?? ''),
    });
    this.namespaces.addHandlers({
      onAdd: (ns) => this.cache.upsertNamespace(ns),
      onUpdate: (_o, ns) => this.cache.upsertNamespace(ns),
      onDelete: (ns) => this.cache.removeNamespace(ns.metadata.name ?? ''),
    });
  }

  /** Starts the informers, waits for their first lists, then starts the loop. */
  async start(): Promise<void> {
    for (const inf of [this.nodes, this.namespaces, this.bound, this.pending]) inf.start();
    await Promise.all([
      this.nodes.waitForSync(),
      this.namespaces.waitForSync(),
      this.bound.waitForSync(),
      this.pending.waitForSync(),
    ]);
    if (!this.stopped) this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.close();
    for (const w of this.bindSlotWaiters.splice(0)) w();
    await this.running;
    await Promise.allSettled([...this.inflightBinds]);
    await Promise.all([this.pending, this.bound, this.nodes, this.namespaces].map((i) => i.stop()));
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const e = this.queue.pop();
      if (!e) {
        await this.queue.wait();
        continue;
      }
      try {
        await this.scheduleOne(e);
      } catch (err) {
        this.report(err);
        this.queue.retry(e);
      }
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private async scheduleOne(e: QueuedPod): Promise<void> {
    const pod = e.pod;
    if (this.cache.nodeOf(pod) !== undefined) {
      this.queue.done(e);
      return;
    }
    this.stats.attempts++;
    const decision: Decision = this.framework.schedule(pod, this.cache.view());
    if (decision.kind === 'unschedulable') {
      this.stats.unschedulable++;
      this.queue.markUnschedulable(e);
      void this.recordFailure(pod, decision.message).catch((err) => this.report(err));
      return;
    }
    this.cache.assume(pod, decision.node);
    this.queue.done(e);
    await this.bindSlot();
    const p = this.bind(pod, decision.node, e.attempts).finally(() => {
      this.inflightBinds.delete(p);
      this.releaseBindSlot();
    });
    this.inflightBinds.add(p);
  }

  private bindSlot(): Promise<void> {
    if (this.bindsInFlight < this.maxBinds || this.stopped) {
      this.bindsInFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.bindSlotWaiters.push(() => {
        this.bindsInFlight++;
        resolve();
      }),
    );
  }

  private releaseBindSlot(): void {
    this.bindsInFlight--;
    this.bindSlotWaiters.shift()?.();
  }

  private async bind(pod: Pod, node: string, attempts: number): Promise<void> {
    const ns = pod.metadata.namespace ?? 'default';
    const name = pod.metadata.name ?? '';
    try {
      await this.kube.transport.request({
        method: 'POST',
        path: `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}/binding`,
        body: {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name, namespace: ns, ...(pod.metadata.uid ? { uid: pod.metadata.uid } : {}) },
          target: { apiVersion: 'v1', kind: 'Node', name: node },
        },
      });
      this.stats.scheduled++;
      this.lastEvent.delete(`${objectKey(pod)}\u0000FailedScheduling`);
      if (this.options.events !== false) {
        void this.event(
          pod,
          'Normal',
          'Scheduled',
          'Binding',
          `Successfully assigned ${ns}/${name} to ${node}`,
        ).catch((err) => this.report(err));
      }
    } catch (err) {
      this.stats.bindFailures++;
      this.cache.forget(pod);
      if (isKubeApiError(err, 404) || isKubeApiError(err, 409)) {
        // Gone, being deleted, bound by someone else, or recreated: nothing to retry; a
        // recreated pod arrives through the informer as a new pod.
        return;
      }
      this.report(err);
      if (this.stopped) return;
      const fresh = this.pending.get(ns, name);
      if (fresh && this.ours(fresh)) this.queue.requeue(fresh, attempts + 1);
    }
  }

  /** PodScheduled=False with the FitError text, and a FailedScheduling Event. */
  private async recordFailure(pod: Pod, message: string): Promise<void> {
    const ns = pod.metadata.namespace ?? 'default';
    const name = pod.metadata.name ?? '';
    const conditions = (pod.status?.conditions ?? []) as Rec[];
    const old = conditions.find((c) => c.type === 'PodScheduled');
    if (!(old?.status === 'False' && old.reason === 'Unschedulable' && old.message === message)) {
      const cond: Rec = {
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message,
        lastProbeTime: null,
        lastTransitionTime:
          old?.status === 'False' && typeof old.lastTransitionTime === 'string'
            ? old.lastTransitionTime
            : rfc3339(Date.now()),
      };
      const next = old ? conditions.map((c) => (c === old ? cond : c)) : [...conditions, cond];
      try {
        await this.kube
          .resource<Pod>(Resources.pods, ns)
          .patch(name, { status: { conditions: next } }, 'merge', { subresource: 'status' });
      } catch (err) {
        if (!isKubeApiError(err, 404)) throw err;
        return;
      }
    }
    if (this.options.events !== false) {
      await this.event(pod, 'Warning', 'FailedScheduling', 'Scheduling', message);
    }
  }

  /** One Event about the pod; the same reason and message again bumps its count. */
  private async event(
    pod: Pod,
    type: 'Normal' | 'Warning',
    reason: string,
    action: string,
    message: string,
  ): Promise<void> {
    const ns = pod.metadata.namespace ?? 'default';
    const events = this.kube.resource(Resources.events, ns);
    const key = `${objectKey(pod)}\u0000${reason}`;
    const now = Date.now();
    const prev = this.lastEvent.get(key);
    if (prev && prev.message === message) {
      prev.count++;
      try {
        await events.patch(prev.name, { count: prev.count, lastTimestamp: rfc3339(now) }, 'merge');
        return;
      } catch (err) {
        if (!isKubeApiError(err, 404)) throw err;
      }
    }
    const name = `${pod.metadata.name ?? ''}.${(BigInt(now) * 1_000_000n).toString(16)}`;
    await events.create({
      metadata: { name, namespace: ns },
      involvedObject: {
        kind: 'Pod',
        apiVersion: 'v1',
        namespace: ns,
        name: pod.metadata.name,
        ...(pod.metadata.uid ? { uid: pod.metadata.uid } : {}),
        ...(pod.metadata.resourceVersion ? { resourceVersion: pod.metadata.resourceVersion } : {}),
      },
      reason,
      message,
      type,
      action,
      source: { component: this.schedulerName },
      reportingComponent: this.schedulerName,
      reportingInstance: this.schedulerName,
      firstTimestamp: rfc3339(now),
      lastTimestamp: rfc3339(now),
      eventTime: microTime(now),
      count: 1,
    });
    if (type === 'Warning') this.lastEvent.set(key, { name, message, count: 1 });
  }

  private report(e: unknown): void {
    try {
      this.options.onError?.(e);
    } catch {
      // An error reporter that fails has nowhere to report to.
    }
  }
}
