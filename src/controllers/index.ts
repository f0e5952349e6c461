/**
 * src/controllers: the controllers of the control plane, clients of the API like any other
 * (src/client/k8s only). `startControllers` starts the chosen ones over shared informers.
 */
import type { SharedInformers } from '../client/k8s/shared-informers.js';
import { DeploymentController } from './deployment.js';
import { EndpointsController } from './endpoints.js';
import { GarbageCollector } from './garbagecollector.js';
import type { ControllerContext } from './lib/context.js';
import { NodeLifecycleController } from './nodelifecycle.js';
import { ReplicaSetController } from './replicaset.js';

export interface RunningController {
  readonly name: string;
  start(): void;
  stop(): Promise<void>;
}

export interface ControllerSettings {
  /** Node lifecycle: a node whose Lease is older than this is unreachable. Default 40 s. */
  nodeMonitorGracePeriodMs?: number;
}

type Factory = (ctx: ControllerContext, s: ControllerSettings) => RunningController;

/** Every controller by name, in start order. */
export const CONTROLLERS: ReadonlyMap<string, Factory> = new Map<string, Factory>([
  ['replicaset', (ctx) => named('replicaset', new ReplicaSetController(ctx))],
  ['deployment', (ctx) => named('deployment', new DeploymentController(ctx))],
  ['endpoints', (ctx) => named('endpoints', new EndpointsController(ctx))],
  ['garbagecollector', (ctx) => named('garbagecollector', new GarbageCollector(ctx))],
  [
    'nodelifecycle',
    (ctx, s) =>
      named(
        'nodelifecycle',
        new NodeLifecycleController(
          ctx,
          s.nodeMonitorGracePeriodMs !== undefined
            ? { gracePeriodMs: s.nodeMonitorGracePeriodMs }
            : {},
        ),
      ),
  ],
]);

function named(name: string, c: { start(): void; stop(): Promise<void> }): RunningController {
  return { name, start: () => c.start(), stop: () => c.stop() };
}

/** Builds the controllers (their informers are registered), to start after the informers. */
export function makeControllers(
  ctx: ControllerContext,
  settings: ControllerSettings = {},
  names: readonly string[] = [...CONTROLLERS.keys()],
): RunningController[] {
  return names.map((n) => {
    const f = CONTROLLERS.get(n);
    if (!f) throw new TypeError(`no controller ${n}; known: ${[...CONTROLLERS.keys()].join(', ')}`);
    return f(ctx, settings);
  });
}

export type { ControllerContext, SharedInformers };
