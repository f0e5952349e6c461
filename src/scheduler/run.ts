/**
 * The scheduler's switch: `startScheduler(client, options)` starts a Scheduler against any
 * Kubernetes API the client reaches (this member, or a remote etcetera) and resolves once
 * its informers have listed; `stop()` ends it. `etcetera serve --scheduler` calls this with
 * a client of the member's own client URL.
 */
import type { KubeClient } from '../client/k8s/index.js';
import { Scheduler, type SchedulerOptions } from './scheduler.js';

export interface RunningScheduler {
  readonly scheduler: Scheduler;
  stop(): Promise<void>;
}

export async function startScheduler(
  client: KubeClient,
  options: SchedulerOptions = {},
): Promise<RunningScheduler> {
  const scheduler = new Scheduler(client, options);
  try {
    await scheduler.start();
  } catch (e) {
    await scheduler.stop();
    throw e;
  }
  return { scheduler, stop: () => scheduler.stop() };
}
