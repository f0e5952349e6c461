/**
 * Simulated nodes: a kubelet per Node without containers, all in one process and all
 * through the Kubernetes client. Each node
 *
 * - registers its Node (capacity = allocatable, the usual labels, a zone spread over the
 *   nodes, its share of the cluster CIDR as spec.podCIDR, the marker label
 *   `etcetera.dev/simulated`), and posts NodeStatus conditions;
 * - renews its Lease in `kube-node-lease` every heartbeat;
 * - runs each Pod bound to it: Pending with ContainerCreating, an IP from the node's
 *   podCIDR, Running after `startDelayMs`, Ready after `readinessDelayMs`;
 * - fails a Pod's containers on request: annotation `sim.etcetera.dev/fail-after-ms`
 *   (and `sim.etcetera.dev/exit-code`, default 1) ends them that long after they start,
 *   and restartPolicy decides (Always, OnFailure with a non-zero code: restart with
 *   restartCount + 1; otherwise the Pod is Failed or Succeeded);
 * - ends a Pod that has a deletionTimestamp: containers stop after `stopDelayMs` (or the
 *   annotation `sim.etcetera.dev/stop-delay-ms`), never later than its grace period, then
 *   the kubelet deletes it with gracePeriodSeconds=0.
 *
 * A Node created by someone else with the marker label `etcetera.dev/simulated=true` is
 * taken over the same way (its podCIDR kept when it has one): a user's own Node gets a
 * simulated kubelet. Deleting such a Node ends its kubelet.
 *
 * No container runs: what would run is recorded in `ran`. Per-Pod state the server does not
 * keep (when each stage began) lives in memory; a restarted simulator reads the rest back
 * from the Pods' status.
 */

import type { KubeClient } from '../client/k8s/client.js';
import { ignoreNotFound } from '../client/k8s/conflict.js';
import { isKubeApiError } from '../client/k8s/errors.js';
import type { Informer } from '../client/k8s/informer.js';
import type { SharedInformers } from '../client/k8s/shared-informers.js';
import { type KubeObject, objectKey, Resources } from '../client/k8s/types.js';
import { isPodReady, microTime, type PodLike, rfc3339 } from '../controllers/lib/context.js';
import {
  Controller,
  type ControllerLogger,
  type ReconcileResult,
} from '../controllers/runtime/controller.js';
import { addressAt, type Cidr, parseCidr, subnet } from '../wire/cidr.js';

export const SIMULATED_LABEL = 'etcetera.dev/simulated';
export const FAIL_AFTER = 'sim.etcetera.dev/fail-after-ms';
export const EXIT_CODE = 'sim.etcetera.dev/exit-code';
export const STOP_DELAY = 'sim.etcetera.dev/stop-delay-ms';
export const NODE_INDEX = 'spec.nodeName';

export interface NodeSimulatorOptions {
  /** How many nodes (named `<prefix>-1` ...), or their names. */
  nodes: number | string[];
  namePrefix?: string;
  /** Zones the nodes are spread over, round robin. Default zone-a, zone-b, zone-c. */
  zones?: string[];
  /** Default 10.244.0.0/16; each node gets a /24 of it (nodeCidrMaskSize). */
  clusterCidr?: string;
  nodeCidrMaskSize?: number;
  capacity?: { cpu: string; memory: string; pods: string };
  /** Lease renewal. Default 10 s (a kubelet's). */
  heartbeatMs?: number;
  leaseDurationSeconds?: number;
  /** NodeStatus is posted every this often even when nothing changed. Default 60 s. */
  statusIntervalMs?: number;
  /** ContainerCreating → Running. Default 100 ms. */
  startDelayMs?: number;
  /** Running → Ready. Default 200 ms. */
  readinessDelayMs?: number;
  /** How long containers take to stop once asked. Default 0. */
  stopDelayMs?: number;
  logger?: ControllerLogger;
  now?: () => number;
}

export interface RanContainer {
  node: string;
  namespace: string;
  pod: string;
  container: string;
  image: string;
  at: string;
}

interface NodeState {
  name: string;
  index: number;
  cidr: Cidr;
  zone: string;
  heartbeat: NodeJS.Timeout | undefined;
  statusTimer: NodeJS.Timeout | undefined;
  lastStatus: number;
  used: Set<number>;
  paused: boolean;
  /** The uid of the Node object this kubelet registered or took over. */
  uid: string | undefined;
}

type Stage = 'creating' | 'running' | 'ready' | 'exited' | 'stopping';

interface PodRun {
  uid: string;
  node: string;
  ip: string;
  ipOffset: number;
  stage: Stage;
  since: number;
  startedAt: number;
  restarts: number;
  lastExit?: { code: number; at: number };
}

const MAX_RAN = 10_000;

export class NodeSimulator {
  readonly ran: RanContainer[] = [];
  readonly controller: Controller;
  private readonly nodes = new Map<string, NodeState>();
  private readonly runs = new Map<string, PodRun>();
  private readonly pods: Informer<PodLike>;
  private readonly nodeObjects: Informer<KubeObject>;
  private started = false;
  private readonly now: () => number;
  private readonly o: Required<Omit<NodeSimulatorOptions, 'logger' | 'now' | 'nodes'>>;
  private readonly cluster: Cidr;
  private stopped = false;

  constructor(
    private readonly kube: KubeClient,
    informers: SharedInformers,
    private readonly options: NodeSimulatorOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.o = {
      namePrefix: options.namePrefix ?? 'node',
      zones: options.zones ?? ['zone-a', 'zone-b', 'zone-c'],
      clusterCidr: options.clusterCidr ?? '10.244.0.0/16',
      nodeCidrMaskSize: options.nodeCidrMaskSize ?? 24,
      capacity: options.capacity ?? { cpu: '4', memory: '16Gi', pods: '110' },
      heartbeatMs: options.heartbeatMs ?? 10_000,
      leaseDurationSeconds: options.leaseDurationSeconds ?? 40,
      statusIntervalMs: options.statusIntervalMs ?? 60_000,
      startDelayMs: options.startDelayMs ?? 100,
      readinessDelayMs: options.readinessDelayMs ?? 200,
      stopDelayMs: options.stopDelayMs ?? 0,
    };
    this.cluster = parseCidr(this.o.clusterCidr);
    this.controller = new Controller('kubelet', (k) => this.reconcile(k), {
      workers: 4,
      ...(options.logger ? { logger: options.logger } : {}),
    });
    informers.addIndex<PodLike>(Resources.pods, NODE_INDEX, (p) => [p.spec?.nodeName ?? '']);
    this.pods = informers.for<PodLike>(Resources.pods);
    this.nodeObjects = informers.for<KubeObject>(Resources.nodes);
    const marked = (n: KubeObject) => {
      const name = n.metadata.name ?? '';
      if (!this.started || this.stopped || this.nodes.has(name)) return;
      if (n.metadata.labels?.[SIMULATED_LABEL] !== 'true' || n.metadata.deletionTimestamp) return;
      this.addNode(name).catch((e) => this.warn(e, name));
    };
    this.nodeObjects.addHandlers({
      onAdd: marked,
      onUpdate: (_o, n) => marked(n),
      onDelete: (n) => this.forget(n.metadata.name ?? '', n.metadata.uid),
    });
    const mine = (p: PodLike) => {
      if (this.nodes.has(p.spec?.nodeName ?? '')) this.controller.enqueue(objectKey(p));
    };
    this.pods.addHandlers({
      onAdd: mine,
      onUpdate: (_o, n) => mine(n),
      onDelete: (p) => {
        if (this.runs.has(objectKey(p))) this.controller.enqueue(objectKey(p));
      },
    });
  }

  /** The simulated node names. */
  get nodeNames(): string[] {
    return [...this.nodes.keys()];
  }

  async start(): Promise<void> {
    const names =
      typeof this.options.nodes === 'number'
        ? Array.from({ length: this.options.nodes }, (_, i) => `${this.o.namePrefix}-${i + 1}`)
        : this.options.nodes;
    this.controller.start();
    for (const name of names) await this.addNode(name);
    this.started = true;
    // Nodes with the marker label that were there before the simulator started.
    for (const n of this.nodeObjects.list()) {
      const name = n.metadata.name ?? '';
      if (n.metadata.labels?.[SIMULATED_LABEL] === 'true' && !n.metadata.deletionTimestamp)
        await this.addNode(name).catch((e) => this.warn(e, name));
    }
  }

  /** A simulated Node was deleted (by anyone): its kubelet stops. */
  private forget(name: string, uid: string | undefined): void {
    const s = this.nodes.get(name);
    // A Node registered again since (removeNode, addNode) is not the one deleted.
    if (!s || s.uid === undefined || s.uid !== uid) return;
    clearInterval(s.heartbeat);
    clearInterval(s.statusTimer);
    this.nodes.delete(name);
  }

  /** Registers (or takes over) a Node and starts its heartbeats. */
  async addNode(name: string): Promise<void> {
    if (this.nodes.has(name)) return;
    const index = this.freeIndex();
    const state: NodeState = {
      name,
      index,
      cidr: subnet(this.cluster, this.o.nodeCidrMaskSize, index),
      zone: this.o.zones[index % this.o.zones.length] as string,
      heartbeat: undefined,
      statusTimer: undefined,
      lastStatus: 0,
      used: new Set(),
      paused: false,
      uid: undefined,
    };
    this.nodes.set(name, state);
    await this.register(state);
    await this.renewLease(state);
    state.heartbeat = setInterval(() => {
      if (!state.paused) this.renewLease(state).catch((e) => this.warn(e, name));
    }, this.o.heartbeatMs);
    state.heartbeat.unref();
    state.statusTimer = setInterval(() => {
      if (!state.paused) this.postStatus(state).catch((e) => this.warn(e, name));
    }, this.o.statusIntervalMs);
    state.statusTimer.unref();
    // Pods bound before the node (re)started.
    for (const p of this.pods.cache.byIndex(NODE_INDEX, name))
      this.controller.enqueue(objectKey(p));
  }

  /** Stops a node's kubelet without touching its objects (as if the machine died). */
  pauseNode(name: string): void {
    const s = this.nodes.get(name);
    if (s) s.paused = true;
  }

  resumeNode(name: string): void {
    const s = this.nodes.get(name);
    if (!s) return;
    s.paused = false;
    this.renewLease(s).catch((e) => this.warn(e, name));
    this.postStatus(s).catch((e) => this.warn(e, name));
    for (const p of this.pods.cache.byIndex(NODE_INDEX, name))
      this.controller.enqueue(objectKey(p));
  }

  /** Stops simulating a node and deletes its Node and Lease. */
  async removeNode(name: string): Promise<void> {
    const s = this.nodes.get(name);
    if (!s) return;
    clearInterval(s.heartbeat);
    clearInterval(s.statusTimer);
    this.nodes.delete(name);
    await ignoreNotFound(this.kube.resource(Resources.nodes).delete(name));
    await ignoreNotFound(this.kube.resource(Resources.leases, 'kube-node-lease').delete(name));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const s of this.nodes.values()) {
      clearInterval(s.heartbeat);
      clearInterval(s.statusTimer);
    }
    await this.controller.stop();
  }

  private freeIndex(): number {
    const used = new Set([...this.nodes.values()].map((n) => n.index));
    let i = 0;
    while (used.has(i)) i++;
    return i;
  }

  private warn(e: unknown, node: string): void {
    if (this.stopped) return;
    this.options.logger?.warn({ node, err: String(e) }, 'simulated node');
  }

  private nodeStatus(s: NodeState): Record<string, unknown> {
    const now = rfc3339(this.now());
    const cond = (type: string, status: string, reason: string, message: string) => ({
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    });
    const cap = this.o.capacity;
    return {
      capacity: { ...cap, 'ephemeral-storage': '100Gi' },
      allocatable: { ...cap, 'ephemeral-storage': '100Gi' },
      conditions: [
        cond(
          'MemoryPressure',
          'False',
          'KubeletHasSufficientMemory',
          'kubelet has sufficient memory available',
        ),
        cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        cond(
          'PIDPressure',
          'False',
          'KubeletHasSufficientPID',
          'kubelet has sufficient PID available',
        ),
        cond('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      addresses: [
        { type: 'InternalIP', address: addressAt(s.cidr, 1) },
        { type: 'Hostname', address: s.name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: s.name,
        systemUUID: s.name,
        bootID: s.name,
        kernelVersion: '6.1.0',
        osImage: 'etcetera simulated node',
        containerRuntimeVersion: 'simulated://1.0',
        kubeletVersion: 'v1.32.0',
        kubeProxyVersion: 'v1.32.0',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    };
  }

  private async register(s: NodeState): Promise<void> {
    const client = this.kube.resource(Resources.nodes);
    const labels = {
      'kubernetes.io/hostname': s.name,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'topology.kubernetes.io/zone': s.zone,
      [SIMULATED_LABEL]: 'true',
    };
    try {
      const made = await client.create({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: s.name, labels },
        spec: { podCIDR: s.cidr.text, podCIDRs: [s.cidr.text] },
      });
      s.uid = made.metadata.uid;
    } catch (e) {
      if (!isKubeApiError(e, 409)) throw e;
      // Taken over: keep its podCIDR when it has one of the cluster CIDR.
      const cur = (await client.get(s.name)) as KubeObject & { spec?: { podCIDR?: string } };
      if (cur.spec?.podCIDR) {
        try {
          s.cidr = parseCidr(cur.spec.podCIDR);
        } catch {}
      }
      const patched = await client.patch(s.name, { metadata: { labels } }, 'merge');
      s.uid = patched.metadata.uid;
    }
    await this.postStatus(s);
  }

  private async postStatus(s: NodeState): Promise<void> {
    s.lastStatus = this.now();
    await this.kube
      .resource(Resources.nodes)
      .patch(s.name, { status: this.nodeStatus(s) }, 'merge', { subresource: 'status' });
  }

  private async renewLease(s: NodeState): Promise<void> {
    const client = this.kube.resource(Resources.leases, 'kube-node-lease');
    const renewTime = microTime(this.now());
    try {
      await client.patch(s.name, { spec: { renewTime, holderIdentity: s.name } }, 'merge');
    } catch (e) {
      if (!isKubeApiError(e, 404)) throw e;
      await client.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: s.name },
        spec: {
          holderIdentity: s.name,
          leaseDurationSeconds: this.o.leaseDurationSeconds,
          renewTime,
        },
      });
    }
  }

  private allocateIp(s: NodeState): { ip: string; offset: number } {
    // .0 is the network, .1 the node itself, the last the broadcast address.
    for (let off = 2; off < s.cidr.size - 1; off++) {
      if (!s.used.has(off)) {
        s.used.add(off);
        return { ip: addressAt(s.cidr, off), offset: off };
      }
    }
    throw new Error(`node ${s.name}: no Pod IP left in ${s.cidr.text}`);
  }

  private release(key: string): void {
    const run = this.runs.get(key);
    if (!run) return;
    this.nodes.get(run.node)?.used.delete(run.ipOffset);
    this.runs.delete(key);
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const pod = this.pods.cache.get(key);
    let run = this.runs.get(key);
    if (!pod || (run && run.uid !== pod.metadata.uid)) {
      this.release(key);
      run = undefined;
      if (!pod) return;
    }
    const node = this.nodes.get(pod.spec?.nodeName ?? '');
    if (!node || node.paused) return;
    const phase = pod.status?.phase;
    const now = this.now();
    if (pod.metadata.deletionTimestamp) return this.terminate(key, pod, run, now);
    if (phase === 'Succeeded' || phase === 'Failed') return;
    if (!run) {
      run = this.adopt(key, pod, node, now);
      if (run.stage === 'creating') {
        await this.writeStatus(pod, run, now);
        return { requeueAfterMs: this.o.startDelayMs };
      }
    }
    switch (run.stage) {
      case 'creating': {
        if (now - run.since < this.o.startDelayMs)
          return { requeueAfterMs: this.o.startDelayMs - (now - run.since) };
        this.toRunning(run, pod, now);
        await this.writeStatus(pod, run, now);
        return this.next(pod, run, now);
      }
      case 'running':
      case 'ready': {
        const failAfter = Number(pod.metadata.annotations?.[FAIL_AFTER] ?? Number.NaN);
        if (Number.isFinite(failAfter) && now - run.startedAt >= failAfter) {
          const code = Number(pod.metadata.annotations?.[EXIT_CODE] ?? '1') || 0;
          run.lastExit = { code, at: now };
          const policy = pod.spec?.restartPolicy ?? 'Always';
          if (policy === 'Always' || (policy === 'OnFailure' && code !== 0)) {
            run.restarts++;
            this.toRunning(run, pod, now);
          } else {
            run.stage = 'exited';
            run.since = now;
          }
          await this.writeStatus(pod, run, now);
          return run.stage === 'exited' ? undefined : this.next(pod, run, now);
        }
        if (run.stage === 'running' && now - run.since >= this.o.readinessDelayMs) {
          run.stage = 'ready';
          run.since = now;
          await this.writeStatus(pod, run, now);
        } else if (!this.statusCurrent(pod, run)) await this.writeStatus(pod, run, now);
        return this.next(pod, run, now);
      }
      default:
        return;
    }
  }

  /** When to look at the Pod again (readiness, or its requested failure). */
  private next(pod: PodLike, run: PodRun, now: number): ReconcileResult {
    const waits: number[] = [];
    if (run.stage === 'running') waits.push(this.o.readinessDelayMs - (now - run.since));
    const failAfter = Number(pod.metadata.annotations?.[FAIL_AFTER] ?? Number.NaN);
    if (Number.isFinite(failAfter)) waits.push(failAfter - (now - run.startedAt));
    if (waits.length === 0) return;
    return { requeueAfterMs: Math.max(1, Math.min(...waits)) };
  }

  /** First sight of a Pod: start it, or take over what its status says. */
  private adopt(key: string, pod: PodLike, node: NodeState, now: number): PodRun {
    const statusIp = pod.status?.podIP;
    let ip: string;
    let offset: number;
    const known = typeof statusIp === 'string' ? this.offsetIn(node.cidr, statusIp) : undefined;
    if (known !== undefined && !node.used.has(known)) {
      node.used.add(known);
      ip = statusIp as string;
      offset = known;
    } else ({ ip, offset } = this.allocateIp(node));
    const containers = (pod.status?.containerStatuses ?? []) as { state?: { running?: unknown } }[];
    const running =
      pod.status?.phase === 'Running' &&
      containers.length > 0 &&
      containers.every((c) => c.state?.running);
    const run: PodRun = {
      uid: pod.metadata.uid ?? '',
      node: node.name,
      ip,
      ipOffset: offset,
      stage: running ? (isPodReady(pod) ? 'ready' : 'running') : 'creating',
      since: now,
      startedAt: now,
      restarts: 0,
    };
    this.runs.set(key, run);
    return run;
  }

  private offsetIn(c: Cidr, ip: string): number | undefined {
    const parts = ip.split('.').map(Number);
    if (parts.length !== 4) return undefined;
    const n =
      (((parts[0] as number) << 24) |
        ((parts[1] as number) << 16) |
        ((parts[2] as number) << 8) |
        (parts[3] as number)) >>>
      0;
    const off = n - c.base;
    return off > 1 && off < c.size - 1 ? off : undefined;
  }

  private toRunning(run: PodRun, pod: PodLike, now: number): void {
    run.stage = this.o.readinessDelayMs <= 0 ? 'ready' : 'running';
    run.since = now;
    run.startedAt = now;
    for (const c of pod.spec?.containers ?? []) {
      this.ran.push({
        node: run.node,
        namespace: pod.metadata.namespace ?? '',
        pod: pod.metadata.name ?? '',
        container: c.name,
        image: c.image ?? '',
        at: new Date(now).toISOString(),
      });
    }
    if (this.ran.length > MAX_RAN) this.ran.splice(0, this.ran.length - MAX_RAN);
  }

  private statusCurrent(pod: PodLike, run: PodRun): boolean {
    const wantReady = run.stage === 'ready';
    return (
      pod.status?.phase === 'Running' &&
      isPodReady(pod) === wantReady &&
      pod.status?.podIP === run.ip
    );
  }

  private async terminate(
    key: string,
    pod: PodLike,
    run: PodRun | undefined,
    now: number,
  ): Promise<ReconcileResult> {
    const grace = Number(
      pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30,
    );
    const wanted = Number(pod.metadata.annotations?.[STOP_DELAY] ?? this.o.stopDelayMs);
    const stopMs = Math.min(Number.isFinite(wanted) ? wanted : 0, Math.max(0, grace) * 1000);
    if (run && run.stage !== 'stopping' && run.stage !== 'exited') {
      run.stage = 'stopping';
      run.since = now;
      // Containers got SIGTERM: the Pod is no longer ready.
      await this.writeStatus(pod, run, now).catch(() => undefined);
    }
    const since = run?.stage === 'stopping' ? run.since : now;
    const left = stopMs - (now - since);
    if (left > 0) return { requeueAfterMs: left };
    await ignoreNotFound(
      this.kube.resource(Resources.pods, pod.metadata.namespace).delete(pod.metadata.name ?? '', {
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata.uid ?? '' },
      }),
    );
    this.release(key);
  }

  private async writeStatus(pod: PodLike, run: PodRun, now: number): Promise<void> {
    const t = rfc3339(now);
    const created = run.stage === 'creating';
    const exited = run.stage === 'exited';
    const stopping = run.stage === 'stopping';
    const ready = run.stage === 'ready';
    const prev = pod.status?.conditions ?? [];
    const cond = (type: string, status: boolean, reason?: string) => {
      const s = status ? 'True' : 'False';
      const old = prev.find((c) => c.type === type);
      return {
        type,
        status: s,
        lastProbeTime: null,
        lastTransitionTime: old && old.status === s ? old.lastTransitionTime : t,
        ...(reason && !status ? { reason } : {}),
      };
    };
    const code = run.lastExit?.code ?? 0;
    const containerStatuses = (pod.spec?.containers ?? []).map((c) => {
      let state: Record<string, unknown>;
      if (created) state = { waiting: { reason: 'ContainerCreating' } };
      else if (exited || stopping)
        state = {
          terminated: {
            exitCode: stopping ? 0 : code,
            reason: stopping || code === 0 ? 'Completed' : 'Error',
            startedAt: rfc3339(run.startedAt),
            finishedAt: t,
          },
        };
      else state = { running: { startedAt: rfc3339(run.startedAt) } };
      return {
        name: c.name,
        image: c.image ?? '',
        imageID: `simulated://${c.image ?? ''}`,
        containerID: created ? undefined : `simulated://${run.uid.slice(0, 8)}-${c.name}`,
        ready,
        started: !created && !exited && !stopping,
        restartCount: run.restarts,
        state,
        ...(run.lastExit && !exited
          ? {
              lastState: {
                terminated: {
                  exitCode: run.lastExit.code,
                  reason: run.lastExit.code === 0 ? 'Completed' : 'Error',
                  finishedAt: rfc3339(run.lastExit.at),
                },
              },
            }
          : {}),
      };
    });
    const policy = pod.spec?.restartPolicy ?? 'Always';
    const phase = created
      ? 'Pending'
      : exited
        ? code === 0 && policy !== 'Always'
          ? 'Succeeded'
          : 'Failed'
        : 'Running';
    const node = this.nodes.get(run.node);
    const status = {
      phase,
      conditions: [
        cond('PodReadyToStartContainers', !created),
        cond('Initialized', true),
        cond('Ready', ready, 'ContainersNotReady'),
        cond('ContainersReady', ready, 'ContainersNotReady'),
        cond('PodScheduled', true),
      ],
      hostIP: node ? addressAt(node.cidr, 1) : undefined,
      hostIPs: node ? [{ ip: addressAt(node.cidr, 1) }] : undefined,
      podIP: run.ip,
      podIPs: [{ ip: run.ip }],
      startTime: (pod.status?.startTime as string | undefined) ?? t,
      containerStatuses,
      qosClass: (pod.status?.qosClass as string | undefined) ?? 'BestEffort',
    };
    await ignoreNotFound(
      this.kube
        .resource(Resources.pods, pod.metadata.namespace)
        .patch(pod.metadata.name ?? '', { status }, 'merge', { subresource: 'status' }),
    );
  }
}
