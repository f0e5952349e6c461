/** src/scheduler: a filter-then-score scheduler that is a client of the Kubernetes API. */
export { SchedulerCache } from './cache.js';
export type { Decision, FrameworkOptions } from './framework.js';
export { Framework, fitErrorMessage, numFeasibleNodesToFind } from './framework.js';
export { milliValue, value } from './quantity.js';
export type { RunningScheduler } from './run.js';
export { startScheduler } from './run.js';
export type { SchedulerOptions, SchedulerStats } from './scheduler.js';
export { Scheduler } from './scheduler.js';
export type * from './types.js';
