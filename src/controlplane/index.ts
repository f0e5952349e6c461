/**
 * The control plane around an API server: the parts that make stored objects happen
 * (controllers, simulated nodes, and whatever else is listed in PARTS), all clients of the
 * Kubernetes API through one KubeClient, so they run the same against this process's
 * member or a remote etcetera.
 *
 * PARTS (parts.ts) is the one list `--control-plane` switches on; a new part adds one entry.
 */
import type { KubeClient } from '../client/k8s/client.js';
import { SharedInformers } from '../client/k8s/shared-informers.js';
import type { ControllerSettings } from '../controllers/index.js';
import type { ControllerLogger } from '../controllers/runtime/controller.js';
import type { NodeSimulator, NodeSimulatorOptions } from '../nodes/simulator.js';
import type { Scheduler, SchedulerOptions } from '../scheduler/scheduler.js';
import { PARTS, partEnabled, type RunningPart } from './parts.js';

export type { ControlPlanePart, PartContext, RunningPart } from './parts.js';
export { PARTS } from './parts.js';

export interface ControlPlaneOptions {
  /** Run the controllers (ReplicaSet, Deployment, ...). */
  controllers?: boolean;
  /** How many simulated nodes; 0 or absent: none. */
  nodes?: number;
  /** Tuning of the simulated nodes (delays, CIDR, zones). */
  nodeOptions?: Omit<NodeSimulatorOptions, 'nodes'>;
  controllerSettings?: ControllerSettings;
  /** Settings of the scheduler (its seed, backoff, ...). */
  schedulerOptions?: SchedulerOptions;
  logger?: ControllerLogger;
  /** Run the scheduler (filter and score, binding through pods/binding). */
  scheduler?: boolean;
  /** Further switches of parts listed in PARTS. */
  [part: string]: unknown;
}

/** The switches `--control-plane` sets: every part of PARTS on (count parts: `count`). */
export function allParts(count = 3): ControlPlaneOptions {
  const o: ControlPlaneOptions = {};
  for (const p of PARTS) o[p.name] = p.kind === 'count' ? count : true;
  return o;
}

export interface RunningControlPlane {
  readonly informers: SharedInformers;
  /** The started parts' handles by name (`nodes` → NodeSimulator). */
  readonly parts: ReadonlyMap<string, unknown>;
  readonly nodes: NodeSimulator | undefined;
  readonly scheduler: Scheduler | undefined;
  stop(): Promise<void>;
}

/** Starts the enabled parts against `kube`; resolves once informers are synced and all run. */
export async function runControlPlane(
  kube: KubeClient,
  options: ControlPlaneOptions,
): Promise<RunningControlPlane> {
  const informers = new SharedInformers(kube, {
    ...(options.logger
      ? { onError: (e: unknown) => options.logger?.warn({ err: String(e) }, 'informer') }
      : {}),
  });
  const running = new Map<string, unknown>();
  const made: RunningPart[] = [];
  for (const part of PARTS) {
    if (!partEnabled(part, options)) continue;
    const r = await part.make({ kube, informers, options, running });
    made.push(r);
    running.set(part.name, r.handle);
  }
  informers.start();
  await informers.waitForSync();
  for (const r of made) await r.start?.();
  return {
    informers,
    parts: running,
    nodes: running.get('nodes') as NodeSimulator | undefined,
    scheduler: running.get('scheduler') as Scheduler | undefined,
    async stop() {
      for (const r of [...made].reverse()) await r.stop();
      await informers.stop();
    },
  };
}
