/**
 * The fan-out benchmark's shared vocabulary: one run's configuration, the key layout (which
 * watcher watches which prefix, which write goes to which key), the monotonic clock every
 * process stamps with, and the IPC messages between the orchestrator (fanout.ts), the load
 * generators (fanout-generator.ts) and the writer (fanout-writer.ts).
 */
import type { System } from './lib/servers.js';

export const SCENARIOS = ['broadcast', 'kubelet', 'ceiling'] as const;
export type Scenario = (typeof SCENARIOS)[number];

/** shared: every watcher on one prefix. own: watcher i alone on prefix i. */
export const LAYOUTS = ['shared', 'own'] as const;
export type Layout = (typeof LAYOUTS)[number];

/** How etcetera is driven: etcd's gRPC API (as etcd is), or its JSON API over websockets. */
export type Protocol = 'grpc' | 'json';

export interface RunConfig {
  system: System;
  /** etcd is always driven over gRPC. */
  protocol: Protocol;
  scenario: Scenario;
  clientUrl: string;
  port: number;
  watchers: number;
  connections: number;
  /** Writes per second, open loop. */
  rate: number;
  durationS: number;
  valueBytes: number;
  layout: Layout;
  /** Distinct keys written under each prefix (round robin). */
  keysPerPrefix: number;
  /** Every watcher starts here: the revision after the one read before any watcher existed. */
  startRevision: number;
  /** Writer's bound on puts in flight; beyond it the writer falls behind its schedule. */
  maxInFlight: number;
}

/**
 * Microseconds on CLOCK_MONOTONIC (what process.hrtime reads on Linux): one clock for every
 * process on the machine, so a writer's stamp and a generator's receipt time subtract.
 */
export function nowUs(): number {
  const [s, ns] = process.hrtime();
  return s * 1e6 + ns / 1e3;
}

/** Prefixes (groups) in a run: one shared, or one per watcher. */
export function groupCount(c: Pick<RunConfig, 'layout' | 'watchers'>): number {
  return c.layout === 'shared' ? 1 : c.watchers;
}

export function groupOfWatcher(c: Pick<RunConfig, 'layout'>, watcher: number): number {
  return c.layout === 'shared' ? 0 : watcher;
}

export function prefixOf(c: Pick<RunConfig, 'layout'>, group: number): string {
  // The trailing slash keeps w1/ from matching w10/.
  return c.layout === 'shared' ? '/fanout/all/' : `/fanout/w${group}/`;
}

/** Write n goes to group n mod groups, to one of that prefix's keys in turn. */
export function writeTarget(c: RunConfig, n: number): { group: number; key: string } {
  const groups = groupCount(c);
  const group = n % groups;
  const k = Math.floor(n / groups) % c.keysPerPrefix;
  return { group, key: `${prefixOf(c, group)}k${k}` };
}

/** [key, range_end) of a prefix: the prefix with its last byte incremented. */
export function prefixRange(prefix: string): { key: Buffer; rangeEnd: Buffer } {
  const key = Buffer.from(prefix);
  const rangeEnd = Buffer.from(key);
  rangeEnd[rangeEnd.length - 1]!++;
  return { key, rangeEnd };
}

/** Watcher i rides on connection i mod C; generator g owns the connections c with c mod G = g. */
export function connectionOfWatcher(c: RunConfig, watcher: number): number {
  return watcher % c.connections;
}

/** What a run's writer achieved, and per group what every watcher of it must receive. */
export interface WriterResult {
  /** Writes committed: acknowledged, plus failed ones found committed after the run. */
  writes: number;
  acked: number;
  /** Puts answered with an error (timeouts among them). */
  errors: number;
  /** Of `errors`, those whose write was committed all the same (their revisions are due). */
  committedFailed: number;
  firstStartUs: number;
  lastStartUs: number;
  /** Achieved writes per second over the schedule. */
  achievedRate: number;
  /** Per group: the revisions of its committed writes (what each of its watchers must get). */
  groupRevisions: number[][];
  putLatency: string;
  cpuPct: number;
  firstError?: string;
}

export interface GeneratorResult {
  index: number;
  watchers: number;
  connections: number;
  setupMs: number;
  delivered: number;
  /** Events missing below a watcher's last received revision: a gap, never to come. */
  lost: number;
  /** Events above a watcher's last received revision when results were asked for. */
  pending: number;
  duplicated: number;
  outOfOrder: number;
  /** Watches the server cancelled, and responses for watch ids nobody created. */
  canceled: number;
  unexpected: number;
  latency: string;
  firstReceiptUs: number;
  lastReceiptUs: number;
  /** CPU (user + system) and event-loop utilisation over [measure, last receipt]. */
  cpuPct: number;
  /** CPU seconds (user + system) over the whole measured phase. */
  cpuSeconds: number;
  eventLoopUtilization: number;
  rssMiB: number;
  errors: string[];
}

export type ToGenerator =
  | { type: 'start'; config: RunConfig; index: number; generators: number }
  | { type: 'measure' }
  | { type: 'finish'; groupRevisions: number[][] };

export type FromGenerator =
  | { type: 'ready'; setupMs: number }
  | { type: 'progress'; delivered: number }
  | { type: 'result'; result: GeneratorResult }
  | { type: 'error'; message: string };

export type ToWriter = { type: 'start'; config: RunConfig } | { type: 'go' };

export type FromWriter =
  | { type: 'ready' }
  | { type: 'done'; result: WriterResult }
  | { type: 'error'; message: string };
