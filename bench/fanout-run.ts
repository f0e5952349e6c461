/**
 * One fan-out run against one system: server up, watchers created, writes at the rate for the
 * duration, a drain until every expected event has arrived (or the drain limit), then results
 * merged from every process and everything stopped by PID, also when a phase fails.
 *
 * Phases and their limits: server ready 30 s; watchers created `setupTimeoutS`; writer ready
 * 30 s; writes `durationS` + 60 s; drain `drainS`; results 60 s; each stop 15 s then SIGKILL.
 */
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import {
  type FromGenerator,
  type FromWriter,
  type GeneratorResult,
  groupCount,
  type RunConfig,
  type Scenario,
  type ToGenerator,
  type ToWriter,
  type WriterResult,
} from './fanout-plan.js';
import { stopChild } from './lib/children.js';
import { type HotFunction, hotFunctions, newestProfile } from './lib/cpuprofile.js';
import { type LatencySummaryMs, mergeHistograms, summarizeMs } from './lib/histogram.js';
import { Worker } from './lib/ipc.js';
import { ProcessSampler } from './lib/proc-stats.js';
import { currentRevision, type ServerProcess, type System, startServer } from './lib/servers.js';

export interface RunShape {
  scenario: Scenario;
  protocol: RunConfig['protocol'];
  watchers: number;
  connections: number;
  rate: number;
  durationS: number;
  valueBytes: number;
  layout: RunConfig['layout'];
  keysPerPrefix: number;
  maxInFlight: number;
}

export interface RunOptions {
  cli: string;
  generators: number;
  setupTimeoutS: number;
  drainS: number;
  /** Directory for the member's CPU profile (etcetera only). */
  cpuProfDir?: string;
  /** The member's --workers (etcetera only; 0 or absent: one process). */
  workers?: number;
}

export interface RunResult extends RunShape {
  system: System;
  /** The member's --workers (etcetera runs). */
  workers?: number;
  repeat: number;
  setupS: number;
  /** Writes committed (what watchers must receive): acknowledged, plus failed but committed. */
  writes: number;
  acked: number;
  writeErrors: number;
  /** Failed puts whose write was committed all the same (see fanout-writer.ts). */
  committedFailed: number;
  achievedRate: number;
  putLatency: LatencySummaryMs;
  expectedDeliveries: number;
  delivered: number;
  deliveriesPerS: number;
  /** Whether every expected event arrived within the drain limit. */
  complete: boolean;
  /** Seconds from the last write's start to the last receipt. */
  tailS: number;
  latency: LatencySummaryMs;
  lost: number;
  pending: number;
  duplicated: number;
  outOfOrder: number;
  canceled: number;
  unexpected: number;
  server: { cpuSeconds: number | null; cpuPct: number | null; rssMiB: number; peakRssMiB: number };
  machineBusyPct: number | null;
  generators: {
    cpuPct: number;
    cpuSeconds: number;
    eventLoopUtilization: number;
    rssMiB: number;
  }[];
  writerCpuPct: number;
  bottleneck: string;
  loadavg: { before: number[]; after: number[] };
  errors: string[];
  profile?: { path: string; totalMs: number; functions: HotFunction[] };
}

const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));

type Gen = Worker<ToGenerator, FromGenerator>;
type Wri = Worker<ToWriter, FromWriter>;

export async function runOnce(
  system: System,
  shape: RunShape,
  options: RunOptions,
  repeat: number,
): Promise<RunResult> {
  const before = loadavg();
  const startedMs = Date.now();
  const server = await startServer(system, {
    cli: options.cli,
    ...(system === 'etcetera' && options.cpuProfDir !== undefined
      ? { cpuProfDir: options.cpuProfDir }
      : {}),
    ...(system === 'etcetera' && options.workers !== undefined ? { workers: options.workers } : {}),
  });
  const workers: (Gen | Wri)[] = [];
  try {
    const config: RunConfig = {
      ...shape,
      protocol: system === 'etcd' ? 'grpc' : shape.protocol,
      system,
      clientUrl: server.clientUrl,
      port: server.port,
      startRevision: (await currentRevision(server.clientUrl)) + 1,
    };
    const partial = await drive(config, options, server, workers);
    await server.stop();
    const profile = profileOf(system, options, startedMs);
    return {
      ...partial,
      ...(system === 'etcetera' ? { workers: options.workers ?? 0 } : {}),
      repeat,
      loadavg: { before, after: loadavg() },
      ...(profile ? { profile } : {}),
    };
  } finally {
    await Promise.all(workers.map((w) => stopChild(w.process, 5000)));
    await server.stop();
  }
}

function profileOf(system: System, options: RunOptions, sinceMs: number) {
  if (system !== 'etcetera' || options.cpuProfDir === undefined) return undefined;
  const path = newestProfile(options.cpuProfDir, sinceMs);
  return path === undefined ? undefined : { path, ...hotFunctions(path) };
}

async function drive(
  config: RunConfig,
  options: RunOptions,
  server: ServerProcess,
  workers: (Gen | Wri)[],
): Promise<Omit<RunResult, 'repeat' | 'loadavg' | 'profile'>> {
  const gens: Gen[] = [];
  const delivered: number[] = [];
  const n = Math.min(options.generators, config.connections);
  for (let g = 0; g < n; g++) {
    const w: Gen = new Worker(`generator ${g}`, here('./fanout-generator.js'));
    workers.push(w);
    gens.push(w);
    delivered.push(0);
    w.onMessage((m) => {
      if (m.type === 'progress') delivered[g] = m.delivered;
    });
    w.send({ type: 'start', config, index: g, generators: n });
  }
  const setup0 = performance.now();
  await Promise.all(gens.map((g) => g.next('ready', options.setupTimeoutS * 1000)));
  const setupS = (performance.now() - setup0) / 1000;

  const writer: Wri = new Worker('writer', here('./fanout-writer.js'));
  workers.push(writer);
  writer.send({ type: 'start', config });
  await writer.next('ready', 30_000);

  const sampler = new ProcessSampler(server.pid);
  const sampling = setInterval(() => sampler.sample(), 500);
  try {
    for (const g of gens) g.send({ type: 'measure' });
    writer.send({ type: 'go' });
    const w = (await writer.next('done', (config.durationS + 60) * 1000)).result;
    const expected = expectedDeliveries(config, w);
    const drainDeadline = performance.now() + options.drainS * 1000;
    while (sum(delivered) < expected && performance.now() < drainDeadline) await sleep(100);
    const serverStats = sampler.read();
    const results = await Promise.all(
      gens.map((g) => {
        const r = g.next('result', 60_000);
        g.send({
          type: 'finish',
          groupRevisions: w.groupRevisions,
        });
        return r;
      }),
    );
    return combine(
      config,
      setupS,
      w,
      expected,
      results.map((r) => r.result),
      serverStats,
    );
  } finally {
    clearInterval(sampling);
  }
}

function expectedDeliveries(config: RunConfig, w: WriterResult): number {
  // shared: every watcher gets every write; own: each write has exactly one watcher.
  return groupCount(config) === 1 ? w.writes * config.watchers : w.writes;
}

function combine(
  config: RunConfig,
  setupS: number,
  w: WriterResult,
  expected: number,
  gens: GeneratorResult[],
  serverStats: ReturnType<ProcessSampler['read']>,
): Omit<RunResult, 'repeat' | 'loadavg' | 'profile'> {
  const delivered = sum(gens.map((g) => g.delivered));
  const lastReceipt = Math.max(0, ...gens.map((g) => g.lastReceiptUs));
  const span = (lastReceipt - w.firstStartUs) / 1e6;
  const generators = gens.map((g) => ({
    cpuPct: g.cpuPct,
    cpuSeconds: g.cpuSeconds,
    eventLoopUtilization: g.eventLoopUtilization,
    rssMiB: g.rssMiB,
  }));
  const base = {
    scenario: config.scenario,
    watchers: config.watchers,
    connections: config.connections,
    rate: config.rate,
    durationS: config.durationS,
    valueBytes: config.valueBytes,
    layout: config.layout,
    keysPerPrefix: config.keysPerPrefix,
    maxInFlight: config.maxInFlight,
    protocol: config.protocol,
    system: config.system,
  };
  const errors = [
    ...(w.firstError ? [`writer: ${w.firstError}`] : []),
    ...gens.flatMap((g) => g.errors),
  ];
  return {
    ...base,
    setupS,
    writes: w.writes,
    acked: w.acked,
    writeErrors: w.errors,
    committedFailed: w.committedFailed,
    achievedRate: w.achievedRate,
    putLatency: summarizeMs(mergeHistograms([w.putLatency])),
    expectedDeliveries: expected,
    delivered,
    deliveriesPerS: span > 0 ? delivered / span : 0,
    complete: delivered >= expected,
    tailS: lastReceipt > 0 ? (lastReceipt - w.lastStartUs) / 1e6 : 0,
    latency: summarizeMs(mergeHistograms(gens.map((g) => g.latency))),
    lost: sum(gens.map((g) => g.lost)),
    pending: sum(gens.map((g) => g.pending)),
    duplicated: sum(gens.map((g) => g.duplicated)),
    outOfOrder: sum(gens.map((g) => g.outOfOrder)),
    canceled: sum(gens.map((g) => g.canceled)),
    unexpected: sum(gens.map((g) => g.unexpected)),
    server: {
      cpuSeconds: serverStats.cpuSeconds,
      cpuPct: serverStats.cpuPct,
      rssMiB: serverStats.rssMiB,
      peakRssMiB: serverStats.peakRssMiB,
    },
    machineBusyPct: serverStats.machineBusyPct,
    generators,
    writerCpuPct: w.cpuPct,
    bottleneck: bottleneck(generators, serverStats.machineBusyPct, serverStats.cpuPct),
    errors,
  };
}

/**
 * Who limited the run, as far as CPU readings can tell. A generator counts as the limit only
 * when it really used (nearly) a core: on a starved machine its event loop looks busy because
 * it waits for a CPU, which says nothing about its own cost.
 */
function bottleneck(
  gens: { cpuPct: number; eventLoopUtilization: number }[],
  machineBusyPct: number | null,
  serverCpuPct: number | null,
): string {
  const busiest = gens.reduce((a, g, i) => (g.cpuPct > (gens[a]?.cpuPct ?? -1) ? i : a), 0);
  const g = gens[busiest];
  if (g !== undefined && g.cpuPct >= 85)
    return `client: generator ${busiest} at ${g.cpuPct.toFixed(0)}% CPU, event loop ${(100 * g.eventLoopUtilization).toFixed(0)}% busy`;
  if (machineBusyPct !== null && machineBusyPct >= 95)
    return `machine: ${machineBusyPct.toFixed(0)}% of all cores busy (server ${serverCpuPct?.toFixed(0) ?? '?'}% CPU)`;
  // A Node member's event loop is one thread: ~85% of a core (GC and I/O threads aside) is full.
  if (serverCpuPct !== null && serverCpuPct >= 80) return `server: ${serverCpuPct.toFixed(0)}% CPU`;
  return 'none saturated';
}

function sum(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
