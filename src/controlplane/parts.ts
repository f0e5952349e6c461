/**
 * The parts of the control plane, in start order: the one list `--control-plane` switches
 * on (each part also has its own switch: a boolean flag named after it, `--nodes N` for the
 * simulated nodes). A part is loaded only when enabled, so this file stays light enough for
 * the command line to read at start.
 */
import type { KubeClient } from '../client/k8s/client.js';
import type { SharedInformers } from '../client/k8s/shared-informers.js';
import type { ControlPlaneOptions } from './index.js';

export interface PartContext {
  kube: KubeClient;
  informers: SharedInformers;
  options: ControlPlaneOptions;
  /** Parts made so far, by name. */
  running: Map<string, unknown>;
}

export interface RunningPart {
  /** Called once every part's informers are synced. */
  start?(): void | Promise<void>;
  stop(): Promise<void>;
  /** What the part exposes (the NodeSimulator for `nodes`). */
  handle?: unknown;
}

export interface ControlPlanePart {
  /** Also its option name and command-line switch. */
  name: string;
  /** 'count' parts take a number (`--nodes 3`); 'switch' parts are on or off. */
  kind: 'switch' | 'count';
  /** Builds the part: registers its informers and handlers, starts nothing yet. */
  make(ctx: PartContext): Promise<RunningPart>;
}

const controllers: ControlPlanePart = {
  name: 'controllers',
  kind: 'switch',
  make: async (ctx) => {
    const { makeControllers } = await import('../controllers/index.js');
    const list = makeControllers(
      {
        kube: ctx.kube,
        informers: ctx.informers,
        ...(ctx.options.logger ? { logger: ctx.options.logger } : {}),
      },
      ctx.options.controllerSettings,
    );
    return {
      start: () => {
        for (const c of list) c.start();
      },
      stop: async () => {
        await Promise.all(list.map((c) => c.stop()));
      },
      handle: list,
    };
  },
};

const nodes: ControlPlanePart = {
  name: 'nodes',
  kind: 'count',
  make: async (ctx) => {
    const { NodeSimulator } = await import('../nodes/simulator.js');
    const sim = new NodeSimulator(ctx.kube, ctx.informers, {
      ...(ctx.options.nodeOptions ?? {}),
      ...(ctx.options.logger ? { logger: ctx.options.logger } : {}),
      nodes: ctx.options.nodes ?? 0,
    });
    return { start: () => sim.start(), stop: () => sim.stop(), handle: sim };
  },
};

const scheduler: ControlPlanePart = {
  name: 'scheduler',
  kind: 'switch',
  make: async (ctx) => {
    const { Scheduler } = await import('../scheduler/scheduler.js');
    const logger = ctx.options.logger;
    const s = new Scheduler(ctx.kube, {
      ...(ctx.options.schedulerOptions ?? {}),
      ...(logger ? { onError: (e: unknown) => logger.warn({ err: String(e) }, 'scheduler') } : {}),
    });
    return { start: () => s.start(), stop: () => s.stop(), handle: s };
  },
};

/** Every part, in start order. A new part adds one line here. */
export const PARTS: readonly ControlPlanePart[] = [controllers, scheduler, nodes];

export function partEnabled(p: ControlPlanePart, o: ControlPlaneOptions): boolean {
  const v = o[p.name];
  return p.kind === 'count' ? typeof v === 'number' && v > 0 : v === true;
}
